//go:build unix

package files

import (
	"io/fs"
	"syscall"
)

// fileID is a file's identity: its device and inode, the same whatever name reaches it.
type fileID struct{ dev, ino uint64 }

func idOf(path string, st fs.FileInfo) fileID {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return fileID{uint64(s.Dev), uint64(s.Ino)} //nolint:unconvert // Dev is uint32 on some platforms
	}
	return fileID{}
}

// nonBlock opens a pipe's end without waiting for the other.
const nonBlock = syscall.O_NONBLOCK
