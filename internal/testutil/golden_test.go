package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeT records failures instead of failing the real test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }
func (f *fakeT) Fatal(...any)          { f.failed = true }

func TestGolden(t *testing.T) {
	if Updating() {
		t.Skip("comparison is off under -update")
	}
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{TB: t}
	Golden(ft, path, []byte("same\n"))
	if ft.failed {
		t.Error("identical output failed the golden comparison")
	}
	ft = &fakeT{TB: t}
	Golden(ft, path, []byte("different\n"))
	if !ft.failed {
		t.Error("different output passed the golden comparison")
	}
	ft = &fakeT{TB: t}
	Golden(ft, filepath.Join(t.TempDir(), "missing.golden"), []byte("x"))
	if !ft.failed {
		t.Error("a missing golden file passed")
	}
}
