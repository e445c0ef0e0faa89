package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A release build's linker flags win over Go's build information, and the JSON names them.
func TestVersionLinkerFlags(t *testing.T) {
	saved := [3]string{buildVersion, buildCommit, buildDate}
	t.Cleanup(func() { buildVersion, buildCommit, buildDate = saved[0], saved[1], saved[2] })
	buildVersion, buildCommit, buildDate = "v0.3.0", "0123456789abcdef0123456789abcdef01234567", "2026-11-01T12:00:00Z"

	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version", "-o", "json"}, streams{Out: &out, ErrOut: &errOut}, nil); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut.String())
	}
	var doc struct {
		Version   string `json:"version"`
		Commit    string `json:"commit"`
		BuildDate string `json:"build_date"`
		Catalog   []struct {
			Family, Newest string
		} `json:"catalog"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, out.String())
	}
	if got, want := [3]string{doc.Version, doc.Commit, doc.BuildDate}, [3]string{buildVersion, buildCommit, buildDate}; got != want {
		t.Errorf("version, commit, build date = %q, want %q", got, want)
	}
	if len(doc.Catalog) == 0 || doc.Catalog[0].Family != "vllm" || doc.Catalog[0].Newest == "" {
		t.Errorf("catalog = %+v, want vLLM's newest release first", doc.Catalog)
	}
	if got, want := buildInfo().Short(), "v0.3.0 (0123456789ab)"; got != want {
		t.Errorf("Short() = %q, want %q", got, want)
	}

	out.Reset()
	if code := run(context.Background(), []string{"--version"}, streams{Out: &out, ErrOut: &errOut}, nil); code != 0 {
		t.Fatalf("--version: exit %d", code)
	}
	if d := cmp.Diff("kvcheck version v0.3.0", firstLine(out.String())); d != "" {
		t.Errorf("--version first line (-want +got):\n%s", d)
	}
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
