package main

import (
	"context"
	"fmt"
	"os"
	"strings"
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
		// [env:NAME] holds when NAME is set and non-empty, as the comment above promises.
		Condition: func(cond string) (bool, error) {
			if name, ok := strings.CutPrefix(cond, "env:"); ok {
				return os.Getenv(name) != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}
