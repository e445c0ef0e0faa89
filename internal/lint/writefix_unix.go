//go:build unix

package lint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// noFollow opens a path without following a final symbolic link.
const noFollow = syscall.O_NOFOLLOW

// writable reports, as an error, whether this process may write the file at path (access(2)
// with W_OK): a file another user owns can be renamed over, given the directory, but is not
// this user's to rewrite.
func writable(path string) error {
	const wOK = 2
	return syscall.Access(path, wOK)
}

// links is the file's number of hard links.
func links(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink) //nolint:unconvert // Nlink is uint16 on some platforms
	}
	return 1
}

// keepOwner gives tmp the owner and group of the file st describes, when they are not already
// its own; chown is refused to a user who is not root and does not own the file.
func keepOwner(tmp *os.File, st fs.FileInfo) error {
	want, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	fst, err := tmp.Stat()
	if err != nil {
		return err
	}
	have, ok := fst.Sys().(*syscall.Stat_t)
	if !ok || (have.Uid == want.Uid && have.Gid == want.Gid) {
		return nil
	}
	return tmp.Chown(int(want.Uid), int(want.Gid))
}

// ownerOf names the file's owner and group: "user alice (uid 1000), group dev (gid 100)".
func ownerOf(st fs.FileInfo) string {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "another user"
	}
	uid, gid := strconv.FormatUint(uint64(s.Uid), 10), strconv.FormatUint(uint64(s.Gid), 10)
	who, grp := "uid "+uid, "gid "+gid
	if u, err := user.LookupId(uid); err == nil {
		who = fmt.Sprintf("user %s (uid %s)", u.Username, uid)
	}
	if g, err := user.LookupGroupId(gid); err == nil {
		grp = fmt.Sprintf("group %s (gid %s)", g.Name, gid)
	}
	return who + ", " + grp
}

// lockFile takes an exclusive flock on f, waiting for it or not; the lock goes with the
// process, so a killed --fix leaves its temporary file unlocked.
func lockFile(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		if err := syscall.Flock(int(f.Fd()), how); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
