package lint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kvcheck/kvcheck/internal/usage"
)

// ChangedSince lists the files of the git work tree at root that differ from the merge base of
// ref and HEAD, as pint ci and golangci-lint's --new-from-rev do: committed on the branch
// since it left ref, changed in the work tree or the index, or untracked (and not ignored).
// Deleted files are left out. Paths are absolute and cleaned. It runs git, which must be on
// PATH; a shallow clone without ref's history fails with what to fetch.
func ChangedSince(ctx context.Context, root, ref string) (map[string]bool, error) {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return nil, usage.Errorf("--changed-since %q: give a git revision (origin/main, HEAD~1, a commit)", ref)
	}
	git := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return nil, fmt.Errorf("git %s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
			}
			return nil, fmt.Errorf("--changed-since needs git: %w", err)
		}
		return out, nil
	}
	if _, err := git("rev-parse", "--verify", "--quiet", ref+"^{commit}"); err != nil {
		return nil, fmt.Errorf("--changed-since %s: not a commit in %s (in a shallow clone fetch it first, e.g. actions/checkout with fetch-depth: 0): %w", ref, root, err)
	}
	base, err := git("merge-base", ref, "HEAD")
	if err != nil {
		return nil, fmt.Errorf("--changed-since %s: no merge base with HEAD (a shallow clone needs more history: fetch-depth: 0): %w", ref, err)
	}
	mb := strings.TrimSpace(string(base))
	changed, err := git("diff", "--name-only", "-z", "--no-renames", "--diff-filter=d", mb)
	if err != nil {
		return nil, fmt.Errorf("--changed-since %s: %w", ref, err)
	}
	untracked, err := git("ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, fmt.Errorf("--changed-since %s: %w", ref, err)
	}
	out := map[string]bool{}
	for _, list := range [][]byte{changed, untracked} {
		for _, p := range bytes.Split(list, []byte{0}) {
			if len(p) > 0 {
				out[filepath.Join(root, filepath.FromSlash(string(p)))] = true
			}
		}
	}
	return out, nil
}
