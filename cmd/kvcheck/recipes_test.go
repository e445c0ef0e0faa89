package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/fleet"
)

// recipeDash is a dashboard with one removed name: the CI recipes' lint finds it.
const recipeDash = `{"panels": [{"title": "KV", "targets": [{"expr": "vllm:gpu_cache_usage_perc", "refId": "A"}]}]}`

// words splits a recipe's command line as sh would for the simple lines recipes hold: words
// separated by spaces, double quotes removed.
func words(line string) []string {
	return strings.Fields(strings.ReplaceAll(line, `"`, ""))
}

// runRecipe runs one kvcheck command line of a recipe in-process, in dir, and returns its exit
// code; a usage error (2) or a runtime error (1) fails the test: the recipe is wrong.
func runRecipe(t *testing.T, dir, line string) int {
	t.Helper()
	args := words(line)
	if len(args) == 0 || args[0] != "kvcheck" {
		t.Fatalf("recipe line %q does not run kvcheck", line)
	}
	t.Chdir(dir)
	var out, errOut bytes.Buffer
	code := run(context.Background(), args[1:], streams{In: bytes.NewReader(nil), Out: &out, ErrOut: &errOut}, nil)
	if code != exitOK && code != exitFindings {
		t.Fatalf("%s: exit %d\n%s%s", line, code, out.String(), errOut.String())
	}
	return code
}

// recipeRepo makes a git repository with dashboards/ and deploy/, a dashboard with a finding
// on a branch off main (origin/main), and the recipes' baseline file.
func recipeRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for p, c := range map[string]string{"dashboards/ok.json": strings.ReplaceAll(recipeDash, "gpu_cache", "kv_cache"), "deploy/README.md": "deploy\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main", ".")
	git("add", ".")
	git("commit", "-q", "-m", "one")
	git("update-ref", "refs/remotes/origin/main", "HEAD")
	if err := os.WriteFile(filepath.Join(dir, "dashboards/new.json"), []byte(recipeDash), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-q", "-m", "two")
	// The baseline is from main: the branch's finding is new.
	if err := os.WriteFile(filepath.Join(dir, ".kvcheck-baseline.json"), []byte(`{"schema_version": 1, "findings": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(src, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestRecipeGitHubActions runs every kvcheck command of the workflow recipe, in a pull
// request's checkout, and checks the upload runs whatever kvcheck exited with.
func TestRecipeGitHubActions(t *testing.T) {
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses, Run, If string
				With          map[string]string
			}
		}
	}
	readYAML(t, "../../docs/recipes/github-actions.yml", &wf)
	dir := recipeRepo(t)
	ran, uploaded := 0, false
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			switch {
			case strings.HasPrefix(st.Run, "kvcheck "):
				line := strings.ReplaceAll(st.Run, "${{ github.base_ref }}", "main")
				if code := runRecipe(t, dir, strings.TrimSpace(line)); code != exitFindings {
					t.Errorf("%s: exit %d, want 3 (the branch adds a removed metric)", line, code)
				}
				ran++
			case strings.HasPrefix(st.Uses, "github/codeql-action/upload-sarif"):
				uploaded = true
				if st.If != "always()" {
					t.Errorf("upload-sarif runs if %q, want always(): it must run when kvcheck failed the step", st.If)
				}
				if _, err := os.Stat(filepath.Join(dir, st.With["sarif_file"])); err != nil {
					t.Errorf("the upload's sarif_file: %v", err)
				}
			}
		}
	}
	if ran < 2 || !uploaded {
		t.Errorf("ran %d kvcheck steps, upload %v; want the lint steps and the upload", ran, uploaded)
	}
}

// TestRecipeGitLab runs the GitLab job's kvcheck command and checks its Code Quality report
// is where the artifacts say, kept when the job fails.
func TestRecipeGitLab(t *testing.T) {
	var ci map[string]struct {
		Script    []string
		Artifacts struct {
			When    string
			Reports map[string]string
		}
	}
	readYAML(t, "../../docs/recipes/gitlab-ci.yml", &ci)
	dir := recipeRepo(t)
	job := ci["kvcheck"]
	ran := 0
	for _, line := range job.Script {
		if strings.HasPrefix(line, "kvcheck ") {
			runRecipe(t, dir, line)
			ran++
		}
	}
	report := job.Artifacts.Reports["codequality"]
	src, err := os.ReadFile(filepath.Join(dir, report))
	if err != nil || ran == 0 {
		t.Fatalf("ran %d lines; the Code Quality report %q: %v", ran, report, err)
	}
	var issues []struct {
		CheckName string `json:"check_name"`
		Location  struct{ Path string }
	}
	if err := json.Unmarshal(src, &issues); err != nil || len(issues) != 1 || issues[0].Location.Path != "dashboards/new.json" {
		t.Errorf("report %s: %v %+v, want the one new finding in dashboards/new.json", src, err, issues)
	}
	if job.Artifacts.When != "always" {
		t.Errorf("artifacts when %q, want always: the report is needed when the job fails", job.Artifacts.When)
	}
}

// TestRecipeKubernetes runs the Job's containers' commands and the port-forward commands of
// the Kubernetes recipe against emulated replicas and a KV-event publisher on loopback,
// standing in for the cluster's addresses.
func TestRecipeKubernetes(t *testing.T) {
	src, err := os.ReadFile("../../docs/recipes/kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name string
						Args []string
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal(src, &job); err != nil {
		t.Fatal(err)
	}
	f := startFleet(t, fleet.Options{Replicas: fleet.Uniform(2, fleet.Config{BlockSize: 16}), Tick: time.Millisecond})
	targets := f.Targets()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub, err := fleet.NewPublisher(ctx, fleet.PublisherConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pub.Close() }()
	at := strings.NewReplacer("vllm-0.vllm:8000", targets[0], "vllm-1.vllm:8000", targets[1], "localhost:8000", targets[0],
		"tcp://vllm-0.vllm:5557", pub.Endpoint(), "tcp://vllm-1.vllm:5557", pub.Endpoint(), "tcp://localhost:5557", pub.Endpoint(),
		"30s", "1s")
	var lines []string
	for _, c := range job.Spec.Template.Spec.Containers {
		lines = append(lines, "kvcheck "+strings.Join(c.Args, " "))
	}
	for _, l := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "#   kvcheck "); ok {
			lines = append(lines, "kvcheck "+rest)
		}
	}
	if len(lines) < 4 {
		t.Fatalf("%d commands in the recipe, want the Job's two and the two port-forwarded", len(lines))
	}
	dir := t.TempDir()
	for _, l := range lines {
		runRecipe(t, dir, at.Replace(l))
	}
}

// TestPreCommitHook runs the hook of .pre-commit-hooks.yaml as pre-commit runs it: its entry
// and args, then the staged files its pattern matches, in the repository's top directory.
// A commit of files kvcheck does not check (a CI workflow, a chart's values) passes; one that
// adds a removed metric fails; one whose only dashboard the repository's .kvcheck.yaml
// excludes passes.
func TestPreCommitHook(t *testing.T) {
	var hooks []struct {
		ID, Entry, Language, Files string
		Args                       []string
		PassFilenames              *bool `yaml:"pass_filenames"`
	}
	readYAML(t, "../../.pre-commit-hooks.yaml", &hooks)
	if len(hooks) != 1 || hooks[0].ID != "kvcheck-lint" || hooks[0].Language != "golang" {
		t.Fatalf("hooks %+v, want kvcheck-lint in golang", hooks)
	}
	h := hooks[0]
	if h.PassFilenames != nil && !*h.PassFilenames {
		t.Fatal("pass_filenames false: the hook would lint nothing it is given")
	}
	match := regexp.MustCompile(h.Files) // pre-commit's files is a Python regex; this one is RE2 too
	dir := t.TempDir()
	files := map[string]string{
		".github/workflows/ci.yml": "name: ci\non: [push]\njobs:\n  b:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make\n",
		"chart/values.yaml":        "replicaCount: 2\nimage: {repository: app}\n",
		"docs/README.md":           "# docs\n",
		"dashboards/new.json":      recipeDash,
		"vendor/old.json":          recipeDash,
		".kvcheck.yaml":            "lint:\n  exclude: [vendor/]\n",
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		staged []string
		want   int
	}{
		{[]string{".github/workflows/ci.yml", "chart/values.yaml", "docs/README.md"}, exitOK},
		{[]string{".github/workflows/ci.yml", "dashboards/new.json"}, exitFindings},
		{[]string{"vendor/old.json", "docs/README.md"}, exitOK},
	} {
		line := h.Entry + " " + strings.Join(h.Args, " ")
		passed := 0
		for _, f := range tc.staged {
			if match.MatchString(f) {
				line += " " + f
				passed++
			}
		}
		if got := runRecipe(t, dir, line); got != tc.want {
			t.Errorf("staged %v (%d passed to the hook): exit %d, want %d", tc.staged, passed, got, tc.want)
		}
	}
}
