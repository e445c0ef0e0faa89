package lint

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFixed: the rewrite goes through a symbolic link to its target, keeps the target's
// permissions and leaves no temporary file behind.
func TestWriteFixed(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dash.json")
	if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFixed(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "new" {
		t.Errorf("target holds %q (%v), want new", b, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file (%v)", err)
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("target mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("%d entries in the directory, want the file and the link", len(es))
	}
	if err := WriteFixed(filepath.Join(dir, "missing.json"), []byte("x")); err == nil {
		t.Error("WriteFixed of a missing file: no error")
	}
}
