//go:build unix

package lint

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteFixedKeepsOwner: the rewrite has the file's owner, group and mode, set-group-ID
// bit included (a rename would give it the owner of whoever ran --fix). Giving a file to
// another user needs root.
func TestWriteFixedKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can make a file another user's")
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	writeFile(t, path, "old", 0o664)
	if err := os.Chown(path, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o664|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := WriteFixed(path, []byte("old"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Sys().(*syscall.Stat_t)
	if s.Uid != 1234 || s.Gid != 5678 || st.Mode() != 0o664|os.ModeSetgid {
		t.Errorf("owner %d:%d mode %v; want 1234:5678 %v", s.Uid, s.Gid, st.Mode(), 0o664|os.ModeSetgid)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("content %q, want new", b)
	}
}

// TestWriteFixedOtherUser: a user who may write a file another user owns (mode 0666) but may
// not give a new file that owner is refused, and the file keeps its owner and content. Run as
// nobody by a copy of this test binary (root sets that up); before, the rename made the file
// nobody's.
func TestWriteFixedOtherUser(t *testing.T) {
	if path := os.Getenv("KVCHECK_FIX_AS_OTHER"); path != "" {
		err := WriteFixed(path, []byte("old"), []byte("new"))
		fmt.Print(err)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a copy of the test as another user")
	}
	dir := t.TempDir()
	// The test's own directory and the one above it, which the testing package makes 0700.
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(dir); d != "/"; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s is not searchable by other users", d)
		}
	}
	exe := filepath.Join(dir, "lint.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	writeFile(t, path, "old", 0o666)
	cmd := exec.Command(exe, "-test.run=^TestWriteFixedOtherUser$")
	cmd.Env = append(os.Environ(), "KVCHECK_FIX_AS_OTHER="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "not rewritten: the file belongs to") || !strings.Contains(string(out), "uid 0") {
		t.Errorf("as nobody: %s; want a refusal naming the owner", out)
	}
	st, _ := os.Stat(path)
	if s := st.Sys().(*syscall.Stat_t); s.Uid != 0 {
		t.Errorf("the file now belongs to uid %d", s.Uid)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("content %q, want old", b)
	}
}
