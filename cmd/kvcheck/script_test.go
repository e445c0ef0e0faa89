package main

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"kvcheck": func() {
			os.Exit(run(context.Background(), os.Args[1:], stdStreams(), os.Environ()))
		},
	})
}

// TestScripts runs the CLI scripts in testdata/script: flags, output and exit codes.
// Scripts that need the shared corpus check [env:KVCHECK_CORPUS] themselves.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "../../testdata/script",
		Setup: func(e *testscript.Env) error {
			if c := os.Getenv("KVCHECK_CORPUS"); c != "" {
				e.Setenv("KVCHECK_CORPUS", c)
			}
			e.Setenv("NO_COLOR", "1")
			return nil
		},
		RequireExplicitExec: false,
	})
}
