package report

import (
	"fmt"
	"strings"
)

// Build is what kvcheck version reports about the running binary: what was built (the release
// and the commit), when, with which Go, and the newest release of each family its metric
// catalog describes, which is what lint judges against by default.
type Build struct {
	// Version is the release (a tag such as v0.3.0), or "devel" for a build from a checkout.
	Version string
	// Commit is the full revision built; empty when the build recorded none.
	Commit string
	// Modified says the work tree had changes the commit does not hold.
	Modified bool
	// CommitTime is the commit's time as Go's build info records it (RFC 3339).
	CommitTime string
	// BuildDate is when a release build ran (RFC 3339), set by the release's -ldflags.
	BuildDate string
	// GoVersion is the toolchain (go1.26.8); Platform is GOOS/GOARCH.
	GoVersion, Platform string
	// Catalog is the newest release the metric catalog knows, per family, in its order.
	Catalog []CatalogRelease
}

// CatalogRelease is the newest release of one family the catalog describes.
type CatalogRelease struct {
	Family  string `json:"family"`
	Display string `json:"display"`
	Newest  string `json:"newest"`
}

// Short is the version as one line: the release, the commit's first 12 hex digits, and a
// mark when the work tree was modified ("v0.3.0 (0123456789ab)", "devel (0123456789ab, modified)").
func (b Build) Short() string {
	s := b.Version
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if b.Modified {
			c += ", modified"
		}
		s += " (" + c + ")"
	}
	return s
}

// Version is the result of kvcheck version. It has no findings.
func Version(b Build) Result {
	return Result{Document: versionDocument(b), Text: func(t *Text) error {
		// Each line wrapped at a terminal's width, a long one under its value.
		for _, l := range strings.Split(strings.TrimSuffix(VersionText(b), "\n"), "\n") {
			t.Line("%s", l)
		}
		return nil
	}}
}

// VersionText is kvcheck version's text, which --version prints too.
func VersionText(b Build) string {
	var s strings.Builder
	fmt.Fprintf(&s, "kvcheck version %s\n", b.Version)
	line := func(k, v string) { fmt.Fprintf(&s, "  %-10s %s\n", k+":", v) }
	commit := b.Commit
	switch {
	case commit == "":
		commit = "unknown (built without version control information)"
	case b.Modified:
		commit += " (modified: the work tree had changes)"
	}
	line("commit", commit)
	if b.CommitTime != "" {
		line("committed", b.CommitTime)
	}
	built := b.BuildDate
	if built == "" {
		built = "unknown (not a release build)"
	}
	line("built", built)
	line("go", b.GoVersion+" "+b.Platform)
	parts := make([]string, len(b.Catalog))
	for i, c := range b.Catalog {
		parts[i] = c.Display + " " + c.Newest
	}
	line("catalog", "newest releases known: "+strings.Join(parts, ", "))
	return s.String()
}

type versionDoc struct {
	SchemaVersion int              `json:"schema_version"`
	Version       string           `json:"version"`
	Commit        string           `json:"commit"`
	Modified      bool             `json:"modified"`
	CommitTime    string           `json:"commit_time,omitempty"`
	BuildDate     string           `json:"build_date,omitempty"`
	GoVersion     string           `json:"go_version"`
	Platform      string           `json:"platform"`
	Catalog       []CatalogRelease `json:"catalog"`
}

func versionDocument(b Build) versionDoc {
	cat := b.Catalog
	if cat == nil {
		cat = []CatalogRelease{}
	}
	return versionDoc{SchemaVersion: SchemaVersion, Version: b.Version, Commit: b.Commit, Modified: b.Modified,
		CommitTime: b.CommitTime, BuildDate: b.BuildDate, GoVersion: b.GoVersion, Platform: b.Platform, Catalog: cat}
}
