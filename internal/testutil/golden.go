// Package testutil holds helpers shared by kvcheck's tests; production code does not import it.
// Golden compares output with a golden file, and rewrites the file when the test binary runs
// with -update (go test ./internal/report -update).
package testutil

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update rewrites golden files instead of comparing against them.
var update = flag.Bool("update", false, "rewrite the golden files instead of comparing against them")

// Updating reports whether the run rewrites golden files.
func Updating() bool { return *update }

// Golden compares got with the file at path (relative to the test's package directory), or
// writes it there under -update. A difference fails the test with a diff; the file's absence
// fails it with the command that creates it.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got); run go test -update if the change is intended, and read the diff before committing it:\n%s", path, d)
	}
}
