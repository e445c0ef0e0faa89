package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		// main itself: signals cancel the run's context (a pty test types Ctrl-C), and a run
		// blocked where a signal cannot reach ends cli.Grace after it.
		"kvcheck": main,
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
			// The repository, for scripts that run its shipped files (action.yml's steps).
			repo, err := filepath.Abs("../..")
			if err != nil {
				return err
			}
			e.Setenv("KVCHECK_REPO", repo)
			return nil
		},
		RequireExplicitExec: false,
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"exitcode": exitcode, "routes": routesCmd},
		// [env:NAME] holds when NAME is set and non-empty, as the comment above promises.
		Condition: func(cond string) (bool, error) {
			if name, ok := strings.CutPrefix(cond, "env:"); ok {
				return os.Getenv(name) != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// exitcode runs a command like exec and checks its exit status, so that scripts tell a runtime
// error (1) from a usage error (2), findings at --fail-on (3) and an interrupt (130):
//
//	exitcode 3 kvcheck lint --fail-on warning dir/
//
// The command's stdout and stderr are there for the assertions that follow, as after exec.
func exitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode (give the code expected)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not an exit status", args[0])
	}
	got := 0
	var ee *exec.ExitError
	if err := ts.Exec(args[1], args[2:]...); errors.As(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	if got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}
