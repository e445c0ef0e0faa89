package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kvcheck/kvcheck/internal/benchdata"
)

// TestLintJobsSameOutput lints the whole corpus, and 80 dashboards assembled from its panels
// (as BENCHMARKS.md's large inputs are, of sizes from one panel to dozens, so that workers
// finish out of order), with one job and with four: every output format, --diff and --fix must
// be the same byte for byte, and --fix must leave the same files.
func TestLintJobsSameOutput(t *testing.T) {
	corpus := os.Getenv("KVCHECK_CORPUS")
	if corpus == "" {
		t.Skip("KVCHECK_CORPUS is not set")
	}
	c, err := benchdata.LoadCorpus(corpus)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	copyTree(t, corpus, filepath.Join(src, "corpus"))
	if _, err := c.Dashboards(filepath.Join(src, "generated"), 80, 1500<<10, 7); err != nil {
		t.Fatal(err)
	}

	// lintWith runs kvcheck lint with --jobs n over a fresh copy of the inputs at tree, and
	// returns its stdout, stderr, the files it wrote with -o, and the tree afterwards.
	tree := filepath.Join(t.TempDir(), "in")
	outs := t.TempDir()
	lintWith := func(n int, args ...string) map[string][]byte {
		t.Helper()
		if err := os.RemoveAll(tree); err != nil {
			t.Fatal(err)
		}
		copyTree(t, src, tree)
		if err := os.RemoveAll(outs); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(outs, 0o755); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		args = append(append([]string{"lint", "--jobs", strconv.Itoa(n)}, args...), tree)
		code := run(context.Background(), args, streams{Out: &out, ErrOut: &errOut}, []string{"NO_COLOR=1"})
		got := map[string][]byte{"exit": []byte(strconv.Itoa(code)), "stdout": out.Bytes(), "stderr": errOut.Bytes()}
		for name, b := range readTree(t, outs) {
			got["-o "+name] = b
		}
		for name, b := range readTree(t, tree) {
			got["tree "+name] = b
		}
		return got
	}
	o := func(f string) string { return f + "=" + filepath.Join(outs, f) }
	for _, args := range [][]string{
		{"--fail-on", "never", "-o", "text", "-o", o("json"), "-o", o("sarif"), "-o", o("github"), "-o", o("codeclimate")},
		{"--diff"},
		{"--fix", "-o", o("json")},
	} {
		one, four := lintWith(1, args...), lintWith(4, args...)
		if len(one["stdout"])+len(one["-o json"]) < 1000 {
			t.Fatalf("%v: the run reported next to nothing:\n%s%s", args, one["stdout"], one["stderr"])
		}
		for k, v := range one {
			if !bytes.Equal(v, four[k]) {
				t.Errorf("%v: %s differs between --jobs 1 and --jobs 4:\n%s\n----\n%s", args, k, head(v), head(four[k]))
			}
		}
		if len(one) != len(four) {
			t.Errorf("%v: %d outputs and files with --jobs 1, %d with --jobs 4", args, len(one), len(four))
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 2000)] }

// copyTree copies the regular files under from to to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(to, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readTree reads the regular files under dir by their paths relative to it.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
