package lint

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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

// TestWriteAllFixed writes only the files that have a rewrite, says which, and stops at a file
// it cannot write.
func TestWriteAllFixed(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var wrote []string
	err := WriteAllFixed([]FileResult{{Path: a, Fixed: []byte("new")}, {Path: b}}, func(p string) { wrote = append(wrote, p) })
	if err != nil || len(wrote) != 1 || wrote[0] != a {
		t.Fatalf("wrote %v, err %v; want only %s", wrote, err, a)
	}
	if got, _ := os.ReadFile(b); string(got) != "old" {
		t.Errorf("%s without a rewrite now holds %q", b, got)
	}
	wrote = nil
	err = WriteAllFixed([]FileResult{{Path: filepath.Join(dir, "missing.json"), Fixed: []byte("x")}, {Path: b, Fixed: []byte("new")}}, func(p string) { wrote = append(wrote, p) })
	if err == nil || len(wrote) != 0 {
		t.Errorf("a missing first file: err %v, wrote %v; want an error and nothing written", err, wrote)
	}
}

// TestLoadIgnore: no ignore file is no rules unless one was named; a named one that is missing
// is an error naming the flag.
func TestLoadIgnore(t *testing.T) {
	t.Chdir(t.TempDir())
	if rules, err := LoadIgnore(""); err != nil || rules != nil {
		t.Errorf(`LoadIgnore("") without %s = %v, %v; want no rules`, IgnoreFileName, rules, err)
	}
	if _, err := LoadIgnore("missing"); err == nil || !strings.Contains(err.Error(), "--ignore-file") {
		t.Errorf("LoadIgnore of a missing named file: %v, want an --ignore-file error", err)
	}
	if err := os.WriteFile(IgnoreFileName, []byte("LL-01  # split GPU\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := LoadIgnore("")
	if err != nil || len(rules) != 1 || rules[0].Code != "LL-01" || rules[0].Reason != "split GPU" {
		t.Errorf(`LoadIgnore("") = %+v, %v; want the LL-01 rule`, rules, err)
	}
	// An ignore file is read up to a bound (one named on the command line could be a device or
	// a pipe without end): 2 MiB of valid rules is refused with an error naming the bound.
	big := bytes.Repeat([]byte("LL-01 dashboards/*.json # split GPU\n"), (2<<20)/36)
	if err := os.WriteFile("big", big, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIgnore("big"); err == nil || !strings.Contains(err.Error(), "larger than 1024 KiB") {
		t.Errorf("LoadIgnore of a 2 MiB file: %v, want an error naming the bound", err)
	}
}
