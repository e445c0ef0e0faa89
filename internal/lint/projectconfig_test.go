package lint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/usage"
)

func loadCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// TestProjectConfigParse reads a config with every key, and checks what each one becomes.
func TestProjectConfigParse(t *testing.T) {
	src := `# the team's gate
version: 1
lint:
  targets:
    vllm: "0.30"
    llm-d: 0.10   # a YAML float: read as written, 0.10, not 0.1
  fail-on: Warning
  baseline: ci/base.json
  include: [dashboards/, "deploy/**/*.yaml"]
  exclude: "**/testdata/**"
  ignore:
    - code: metric-deprecated
      paths: [legacy/]
      reason: the old fleet
    - code: LL-01
  severity:
    metric-unknown: error
    counter-without-rate: info
`
	cfg, err := ParseProjectConfig(".kvcheck.yaml", []byte(src), loadCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, x := range cfg.Targets {
		targets = append(targets, x.Family+"="+x.Version.String()+"@"+x.At)
	}
	if diff := cmp.Diff([]string{"vllm=0.30.0@.kvcheck.yaml:5", "llm-d=0.10.0@.kvcheck.yaml:6"}, targets); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if cfg.FailOn != "warning" || cfg.FailOnAt != ".kvcheck.yaml:7" {
		t.Errorf("fail-on %q at %q, want warning at .kvcheck.yaml:7", cfg.FailOn, cfg.FailOnAt)
	}
	if cfg.Baseline != "ci/base.json" {
		t.Errorf("baseline %q", cfg.Baseline)
	}
	if len(cfg.Include) != 2 || len(cfg.Exclude) != 1 || cfg.Exclude[0].At != ".kvcheck.yaml:10" {
		t.Errorf("include %+v exclude %+v", cfg.Include, cfg.Exclude)
	}
	if len(cfg.Ignore) != 2 || cfg.Ignore[0].Code != "metric-deprecated" || cfg.Ignore[0].Reason != "the old fleet" ||
		cfg.Ignore[0].Source != ".kvcheck.yaml:12" || len(cfg.Ignore[1].globs) != 0 {
		t.Errorf("ignore %+v", cfg.Ignore)
	}
	want := []severityOverride{{"metric-unknown", finding.Error, ".kvcheck.yaml:17"}, {"counter-without-rate", finding.Info, ".kvcheck.yaml:18"}}
	if diff := cmp.Diff(want, cfg.Severity); diff != "" {
		t.Errorf("severity (-want +got):\n%s", diff)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings %q, want none", cfg.Warnings)
	}
}

// TestProjectConfigErrors: a value of a key kvcheck reads that it cannot use is an error naming
// the file, the line and the key, and what to write; a key, family or code it does not know is a
// warning naming them, and the rest of the file is read.
func TestProjectConfigErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"lint:\n  targets:\n    vllm: zero\n", `c.yaml:3: lint.targets.vllm: version "zero"`},
		{"lint:\n  fail-on: fatal\n", `c.yaml:2: lint.fail-on: "fatal": write error, warning, info or never`},
		{"lint:\n  severity:\n    metric-removed: critical\n", `c.yaml:3: lint.severity.metric-removed: "critical": write error, warning or info`},
		{"lint:\n  include: ['[a']\n", `c.yaml:2: lint.include[0]: "[a": bad pattern`},
		{"lint:\n  exclude: [../other]\n", `c.yaml:2: lint.exclude[0]: "../other": a glob is a path inside the config's directory`},
		{"lint:\n  ignore:\n    - paths: a/\n", `c.yaml:3: lint.ignore[0]: no code`},
		{"lint:\n  ignore:\n    code: x\n", `c.yaml:3: lint.ignore: want a list of {code, paths, reason}, got a mapping`},
		{"lint:\n  ignore:\n    - code: a b\n", `c.yaml:3: lint.ignore[0].code: "a b": one code an entry`},
		{"lint: [1]\n", `c.yaml:1: lint: want a mapping of keys to values, got a list`},
		{"lint:\n  targets: &t {vllm: '0.1'}\n  severity: *t\n", `c.yaml:3: lint.severity: an alias`},
		{"lint:\n  fail-on: error\n  fail-on: warning\n", `c.yaml:3: lint.fail-on: given twice`},
		{"lint:\n  baseline: {a: 1}\n", `c.yaml:2: lint.baseline: want a value, got a mapping`},
		{"version: one\n", `c.yaml:1: version: "one": want 1`},
		{"lint: {\n", `c.yaml: not YAML`},
		{"lint: {}\n---\nlint: {}\n", `c.yaml: more than one YAML document`},
		{"- a\n", `c.yaml:1: the file: want a mapping of keys to values, got a list`},
	} {
		_, err := ParseProjectConfig("c.yaml", []byte(tc.src), loadCatalog(t))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.src, err, tc.want)
			continue
		}
		if !usage.Is(err) {
			t.Errorf("%q: %v is no usage error (exit 2)", tc.src, err)
		}
	}

	cfg, err := ParseProjectConfig("c.yaml", []byte(`version: 2
output: sarif
lint:
  fail-on: warning
  colour: blue
  targets: {vllm: "0.30", trtllm: "1.0"}
  severity: {metric-removd: info}
  ignore:
    - {code: LL-99, reason: x, until: 2027-01-01}
`), loadCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"c.yaml:1: version: 2 is newer than this kvcheck's config format (1)",
		"c.yaml:2: output: unknown key, ignored",
		"c.yaml:5: lint.colour: unknown key, ignored (lint reads targets",
		"c.yaml:6: lint.targets.trtllm: a family this kvcheck does not know, ignored",
		`c.yaml:7: lint.severity.metric-removd: no lint finding has code "metric-removd"`,
		`c.yaml:9: lint.ignore[0].code: no lint finding has code "LL-99"`,
		"c.yaml:9: lint.ignore[0].until: unknown key, ignored",
	}
	if len(cfg.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %d", cfg.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(cfg.Warnings[i], w) {
			t.Errorf("warning %d %q, want it to begin %q", i, cfg.Warnings[i], w)
		}
	}
	if cfg.FailOn != "warning" || len(cfg.Targets) != 1 {
		t.Errorf("the keys known were not read: fail-on %q, targets %+v", cfg.FailOn, cfg.Targets)
	}
	// Known codes, by code and by rule id, any case: no warning.
	cfg, err = ParseProjectConfig("c.yaml", []byte("lint:\n  severity: {ll-01: info, litellm/no-affinity: error, yaml-aliases: warning, series-stale: info}\n"), loadCatalog(t))
	if err != nil || len(cfg.Warnings) != 0 {
		t.Errorf("known codes: %v, warnings %q", err, cfg.Warnings)
	}
	// An empty file, or one of comments, configures nothing.
	for _, src := range []string{"", "# nothing yet\n", "lint:\n"} {
		if _, err := ParseProjectConfig("c.yaml", []byte(src), loadCatalog(t)); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

// TestGlobMatch: the glob rules, each case worked out from the rule it shows.
func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		glob, path string
		want       bool
	}{
		{"vendor", "vendor/x/y.json", true},   // a directory covers what is under it
		{"vendor/", "vendor/y.json", true},    // a trailing slash is dropped
		{"vendor", "a/vendor/y.json", true},   // no slash: a name at any depth
		{"/vendor", "a/vendor/y.json", false}, // a leading slash anchors it at the top
		{"/vendor", "vendor/y.json", true},    //
		{"*.md", "docs/a/readme.md", true},    // a name pattern at any depth
		{"dashboards/*.json", "dashboards/a.json", true},
		{"dashboards/*.json", "dashboards/sub/a.json", false}, // * stays within a segment
		{"dashboards/**/*.json", "dashboards/a.json", true},   // ** may match no directory
		{"dashboards/**/*.json", "dashboards/x/y/a.json", true},
		{"**/testdata/**", "internal/lint/testdata/a.yaml", true},
		{"**/testdata/**", "testdata/a.yaml", true},
		{"**/testdata/**", "mytestdata/a.yaml", false},
		{"deploy/*/values.yaml", "deploy/prod/values.yaml", true},
		{"deploy/*/values.yaml", "deploy/values.yaml", false},
		{"a/**/b/**/c", "a/x/b/y/z/c", true},
		{"a/**/b/**/c", "a/x/c", false},
		{"**", "anything/at/all", true},
		{"d?sh", "dash/a.json", true},
		{"[ab].json", "x/b.json", true},
	} {
		g, err := compileGlob(tc.glob)
		if err != nil {
			t.Fatalf("%q: %v", tc.glob, err)
		}
		if got := g.match(tc.path); got != tc.want {
			t.Errorf("glob %q on %q: %v, want %v", tc.glob, tc.path, got, tc.want)
		}
	}
	// Many ** against a long path stays quick: the matcher is proportional to their product.
	g, err := compileGlob(strings.Repeat("**/", 40) + "x")
	if err != nil {
		t.Fatal(err)
	}
	if g.match(strings.Repeat("d/", 200) + "y") {
		t.Error("matched a path that does not end in x")
	}
}

// TestProjectConfigFiles: the config found upward from the working directory, its globs, ignores
// and baseline relative to its own directory; flags win for the targets.
func TestProjectConfigFiles(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "team", "dash")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, ".kvcheck.yaml"), `lint:
  targets: {vllm: "0.10", llm-d: "0.9", gaie: "1.2"}
  baseline: ci/base.json
  include: [team/]
  exclude: ["**/old/**"]
  ignore:
    - {code: metric-deprecated, paths: team/dash/legacy.json}
`)
	cat := loadCatalog(t)
	got, err := FindProjectConfig(sub)
	if err != nil || got != filepath.Join(root, ".kvcheck.yaml") {
		t.Fatalf("found %q, %v", got, err)
	}
	cfg, err := LoadProjectConfig("", sub, cat)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != filepath.Join("..", "..", ".kvcheck.yaml") || cfg.Dir != root {
		t.Errorf("path %q dir %q", cfg.Path, cfg.Dir)
	}
	// The baseline is the config's ci/base.json, named from the working directory.
	if want := filepath.Join("..", "..", "ci", "base.json"); cfg.Baseline != want {
		t.Errorf("baseline %q, want %q", cfg.Baseline, want)
	}
	for _, tc := range []struct {
		file string
		left bool
	}{
		{filepath.Join(sub, "a.json"), false},
		{filepath.Join(sub, "old", "a.json"), true},    // excluded
		{filepath.Join(root, "other", "a.json"), true}, // not included
		{filepath.Join(root, "team"), false},           // included itself
		{filepath.Join(t.TempDir(), "x.json"), false},  // outside the config's directory
	} {
		if why, left := cfg.Leaves(tc.file); left != tc.left {
			t.Errorf("%s: left out %v (%s), want %v", tc.file, left, why, tc.left)
		}
	}
	// The ignore's path is the config's, whatever directory the finding's path is relative to.
	t.Chdir(sub)
	legacy := Finding{Finding: finding.Finding{Code: CodeDeprecated, File: "legacy.json"}}
	other := Finding{Finding: finding.Finding{Code: CodeDeprecated, File: "new.json"}}
	if !cfg.Ignore[0].matches(&legacy) || cfg.Ignore[0].matches(&other) {
		t.Errorf("ignore of team/dash/legacy.json: legacy %v, new %v; want true, false", cfg.Ignore[0].matches(&legacy), cfg.Ignore[0].matches(&other))
	}
	// Flags win per family: --target-version takes vLLM's, --target llm-d=... llm-d's; GAIE's
	// stays the config's.
	if got := cfg.TargetSpec("0.12", "llm-d=0.10", cat); got != "llm-d=0.10,gaie=1.2.0" {
		t.Errorf("targets %q, want llm-d=0.10,gaie=1.2.0", got)
	}
	if got := cfg.TargetSpec("", "", cat); got != "vllm=0.10.0,llm-d=0.9.0,gaie=1.2.0" {
		t.Errorf("targets %q", got)
	}
	// --config names a file; a missing one is a usage error naming the flag.
	if _, err := LoadProjectConfig(filepath.Join(root, "nope.yaml"), sub, cat); err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing --config: %v", err)
	}
	// Two names in one directory are refused, naming both.
	write(filepath.Join(root, ".kvcheck.yml"), "lint: {}\n")
	if _, err := FindProjectConfig(sub); err == nil || !strings.Contains(err.Error(), ".kvcheck.yml") {
		t.Errorf("two configs: %v", err)
	}
}

// TestApplySeverity: an override by code or rule id sets the severity; the last one written wins.
func TestApplySeverity(t *testing.T) {
	cfg := &ProjectConfig{Severity: []severityOverride{{"metric-unknown", finding.Error, ""}, {"LL-01", finding.Info, ""}, {"metric-unknown", finding.Info, ""}}}
	files := []FileResult{{Findings: []Finding{
		{Finding: finding.Finding{Code: CodeUnknown, Severity: finding.Warning}},
		{Finding: finding.Finding{Code: "litellm/no-affinity", Rule: "LL-01", Severity: finding.Warning}},
		{Finding: finding.Finding{Code: CodeRemoved, Severity: finding.Error}},
	}}}
	cfg.ApplySeverity(files)
	var got []finding.Severity
	for _, f := range files[0].Findings {
		got = append(got, f.Severity)
	}
	if diff := cmp.Diff([]finding.Severity{finding.Info, finding.Info, finding.Error}, got); diff != "" {
		t.Errorf("severities (-want +got):\n%s", diff)
	}
}

// FuzzProjectConfig: no content makes the config's parser panic, and every error names the file.
func FuzzProjectConfig(f *testing.F) {
	for _, s := range []string{
		"version: 1\nlint:\n  targets: {vllm: '0.30'}\n  fail-on: warning\n  include: [a/, '**/b']\n",
		"lint:\n  ignore:\n    - {code: LL-01, paths: [x/**], reason: y}\n  severity: {metric-unknown: error}\n",
		"lint: &a {targets: *a}\n", "lint:\n  exclude: [\"[\"]\n", "- 1\n", "{", "lint: !!binary aGk=\n",
		"lint:\n  targets:\n    ? [a]\n    : b\n", "version: 99999999999999999999\n",
	} {
		f.Add([]byte(s))
	}
	cat := loadCatalog(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, err := ParseProjectConfig("fuzz.yaml", src, cat)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %q does not begin with the file's name", err)
			}
			return
		}
		for _, g := range append(append([]pathGlob{}, cfg.Include...), cfg.Exclude...) {
			g.match("a/b/c.json")
		}
	})
}
