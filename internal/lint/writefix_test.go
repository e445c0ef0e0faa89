package lint

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/catalog"
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
	if err := WriteFixed(link, []byte("old"), []byte("new")); err != nil {
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
	if err := WriteFixed(filepath.Join(dir, "missing.json"), nil, []byte("x")); err == nil {
		t.Error("WriteFixed of a missing file: no error")
	}
}

// TestWriteFixedRefuses: --fix leaves a file as it is, with an error saying why and what to
// do, when rewriting it would lose something. Before, each was rewritten: the edit, the
// read-only mode and the hard link were lost.
func TestWriteFixedRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string) (original string)
		want  string
	}{{
		name: "changed since read",
		setup: func(t *testing.T, path string) string {
			writeFile(t, path, "old plus an edit made while lint ran", 0o644)
			return "old"
		},
		want: "changed since lint read it",
	}, {
		// The same size, so only the content tells the edit.
		name: "changed since read, same size",
		setup: func(t *testing.T, path string) string {
			writeFile(t, path, "olD", 0o644)
			return "old"
		},
		want: "changed since lint read it",
	}, {
		name: "read-only",
		setup: func(t *testing.T, path string) string {
			writeFile(t, path, "old", 0o444)
			return "old"
		},
		want: "read-only (mode 0444)",
	}, {
		name: "hard link",
		setup: func(t *testing.T, path string) string {
			writeFile(t, path, "old", 0o644)
			if err := os.Link(path, path+".other"); err != nil {
				t.Skip("no hard links here:", err)
			}
			return "old"
		},
		want: "2 hard links",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rules.yaml")
			original := tc.setup(t, path)
			before, _ := os.ReadFile(path)
			stBefore, _ := os.Stat(path)
			err := WriteFixed(path, []byte(original), []byte("new"))
			var refused *FixRefused
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err %v; want a refusal naming %s and saying %q", err, path, tc.want)
			}
			after, _ := os.ReadFile(path)
			stAfter, _ := os.Stat(path)
			if !bytes.Equal(before, after) || !os.SameFile(stBefore, stAfter) || stBefore.Mode() != stAfter.Mode() {
				t.Errorf("the file was touched: %q -> %q, mode %v -> %v", before, after, stBefore.Mode(), stAfter.Mode())
			}
			if es, _ := filepath.Glob(filepath.Join(filepath.Dir(path), fixTempPrefix+"*")); len(es) != 0 {
				t.Errorf("temporary files left: %v", es)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestCheckFixRefusesEdit: an edit made to a file while lint runs, after lint read it, is
// kept: --fix refuses that file, still rewrites the others, and its findings are no longer
// marked fixed. Before, the rewrite of what lint had read was renamed over the edit.
func TestCheckFixRefusesEdit(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	const rules = "groups:\n- name: kv\n  rules:\n  - alert: KVFull\n    expr: vllm:gpu_cache_usage_perc > 0.9\n"
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	writeFile(t, a, rules, 0o644)
	writeFile(t, b, rules, 0o644)
	edited := rules + "  # an edit made during the run\n"
	var wrote []string
	run, err := Check(context.Background(), cat, RunOptions{Options: Options{Rewrite: true}, Fix: true}, []string{a, b}, func(p string) {
		wrote = append(wrote, p)
		if p == a {
			writeFile(t, b, edited, 0o644) // after lint read b, before --fix writes it
		}
	})
	var refused *FixRefused
	if !errors.As(err, &refused) || refused.Path != b {
		t.Fatalf("err %v; want b refused", err)
	}
	if got, _ := os.ReadFile(b); string(got) != edited {
		t.Errorf("b holds:\n%s\nwant the edit kept", got)
	}
	if got, _ := os.ReadFile(a); !strings.Contains(string(got), "vllm:kv_cache_usage_perc") || len(wrote) != 1 {
		t.Errorf("a holds:\n%s\nwrote %v; want a rewritten", got, wrote)
	}
	if len(run.Files) != 2 || !run.Fix {
		t.Fatalf("run: %d files, fix %v; want both files reported", len(run.Files), run.Fix)
	}
	for _, f := range run.Files {
		for _, x := range f.Findings {
			if x.Fixed != (f.Path == a) {
				t.Errorf("%s: %s fixed %v", f.Path, x.Code, x.Fixed)
			}
		}
	}
}

// TestRemoveStaleTemps: a --fix run removes the temporary files killed runs left in the
// directories it walks, and leaves one that a running --fix holds (locked), and the file
// they were for holds what it did.
func TestRemoveStaleTemps(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "rules.yaml"), "groups:\n- name: kv\n  rules:\n  - alert: KVFull\n    expr: vllm:gpu_cache_usage_perc > 0.9\n", 0o644)
	stale, held := filepath.Join(dir, fixTempPrefix+"111"), filepath.Join(dir, fixTempPrefix+"222")
	writeFile(t, stale, "half a rewrite", 0o644)
	writeFile(t, held, "a rewrite being written", 0o644)
	f, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := lockFile(f, true); err != nil {
		t.Fatal(err)
	}
	run, err := Check(context.Background(), cat, RunOptions{Options: Options{Rewrite: true}, Fix: true}, []string{dir}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.RemovedTemps) != 1 || run.RemovedTemps[0] != stale {
		t.Errorf("removed %v, want %s", run.RemovedTemps, stale)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there (%v)", stale, err)
	}
	if _, err := os.Stat(held); err != nil {
		t.Errorf("the held temporary file was removed: %v", err)
	}
	// A run without --fix leaves them.
	writeFile(t, stale, "half a rewrite", 0o644)
	if run, err = Check(context.Background(), cat, RunOptions{}, []string{dir}, func(string) {}); err != nil || len(run.RemovedTemps) != 0 {
		t.Errorf("lint without --fix: removed %v, err %v", run.RemovedTemps, err)
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
	err := WriteAllFixed([]FileResult{{Path: a, Original: []byte("old"), Fixed: []byte("new")}, {Path: b}}, func(p string) { wrote = append(wrote, p) })
	if err != nil || len(wrote) != 1 || wrote[0] != a {
		t.Fatalf("wrote %v, err %v; want only %s", wrote, err, a)
	}
	if got, _ := os.ReadFile(b); string(got) != "old" {
		t.Errorf("%s without a rewrite now holds %q", b, got)
	}
	wrote = nil
	rs := []FileResult{{Path: filepath.Join(dir, "missing.json"), Fixed: []byte("x")}, {Path: b, Original: []byte("old"), Fixed: []byte("new"), Findings: []Finding{{Fixed: true}}}}
	err = WriteAllFixed(rs, func(p string) { wrote = append(wrote, p) })
	if err == nil || len(wrote) != 0 {
		t.Errorf("a missing first file: err %v, wrote %v; want an error and nothing written", err, wrote)
	}
	if rs[1].Fixed != nil || rs[1].Findings[0].Fixed {
		t.Errorf("the file after the stop still says fixed")
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
