package lint

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// Baseline is a repository's accepted findings (lint --write-baseline, then --baseline):
// those it holds do not fail a run, new ones do. A finding is matched by its code, its file
// (relative to the git work tree's top level, so the baseline works from any directory) and
// its metric, not by line, so edits above a finding do not make it new; Count says how many
// such findings were accepted, so a second one of the same key is new.
type Baseline struct {
	SchemaVersion int             `json:"schema_version"`
	Comment       string          `json:"comment"`
	Findings      []BaselineEntry `json:"findings"`
	path          string
}

// BaselineEntry is one key of the baseline and how many findings it accepts.
type BaselineEntry struct {
	Code   string `json:"code"`
	File   string `json:"file"`
	Metric string `json:"metric,omitempty"`
	Count  int    `json:"count"`
}

type baselineKey struct{ code, file, metric string }

// The baseline states of a finding (finding.Finding.Baseline), as SARIF names them.
const (
	BaselineNew       = "new"
	BaselineUnchanged = "unchanged"
)

// maxBaseline bounds the baseline file read: a few thousand keys take a few hundred KB.
const maxBaseline = 16 << 20

// keyOf is a finding's baseline key; root and wd resolve its path.
func keyOf(f *Finding, root, wd string) baselineKey {
	p := f.File
	if root != "" {
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(wd, p)
		}
		if rel, err := filepath.Rel(root, abs); err == nil && !strings.HasPrefix(rel, "..") {
			p = rel
		}
	}
	return baselineKey{f.Code, filepath.ToSlash(filepath.Clean(p)), f.Metric}
}

// baselinable says whether a finding may be accepted: a file that was not checked never is
// (a baseline must not pass what nothing read); a note that a file was partly checked (a Helm
// template) may be.
func baselinable(f *Finding) bool {
	return !(f.Code == CodeSkipped && f.Severity == finding.Error) && f.Code != CodeYAMLBomb
}

// NewBaseline accepts every finding of the run that may be accepted.
func NewBaseline(files []FileResult, root, wd string) *Baseline {
	counts := map[baselineKey]int{}
	for _, r := range files {
		for i := range r.Findings {
			if baselinable(&r.Findings[i]) {
				counts[keyOf(&r.Findings[i], root, wd)]++
			}
		}
	}
	b := &Baseline{SchemaVersion: 1, Findings: []BaselineEntry{},
		Comment: "kvcheck lint's accepted findings: these do not fail a run given --baseline, new ones do. Matched by code, file and metric; rewrite it with --write-baseline."}
	for k, n := range counts {
		b.Findings = append(b.Findings, BaselineEntry{Code: k.code, File: k.file, Metric: k.metric, Count: n})
	}
	slices.SortFunc(b.Findings, func(x, y BaselineEntry) int {
		return cmp.Or(strings.Compare(x.File, y.File), strings.Compare(x.Code, y.Code), strings.Compare(x.Metric, y.Metric))
	})
	return b
}

// Write writes the baseline as indented JSON, sorted, so that a change to it reads as a diff.
func (b *Baseline) Write(path string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return fmt.Errorf("--write-baseline %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--write-baseline %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("--write-baseline %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("--write-baseline %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--write-baseline %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--write-baseline %s: %w", path, err)
	}
	return nil
}

// LoadBaseline reads a baseline file --write-baseline wrote.
func LoadBaseline(path string) (*Baseline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w (write one with --write-baseline %s)", err, path)
	}
	defer func() { _ = f.Close() }() // read only
	src, err := io.ReadAll(io.LimitReader(f, maxBaseline+1))
	if err != nil {
		return nil, fmt.Errorf("--baseline %s: %w", path, err)
	}
	if len(src) > maxBaseline {
		return nil, fmt.Errorf("--baseline %s: larger than %d MiB: not a baseline kvcheck wrote", path, maxBaseline>>20)
	}
	var b Baseline
	dec := json.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("--baseline %s: not a kvcheck baseline (JSON with schema_version and findings): %w", path, err)
	}
	if b.SchemaVersion == 0 {
		return nil, fmt.Errorf("--baseline %s: not a kvcheck baseline (no schema_version): write one with --write-baseline", path)
	}
	if b.SchemaVersion != 1 {
		return nil, fmt.Errorf("--baseline %s: schema_version %d, this kvcheck reads 1: rewrite it with --write-baseline", path, b.SchemaVersion)
	}
	for i, e := range b.Findings {
		if e.Code == "" || e.File == "" || e.Count < 1 {
			return nil, fmt.Errorf("--baseline %s: finding %d needs a code, a file and a count of at least 1", path, i)
		}
	}
	b.path = path
	return &b, nil
}

// Apply marks each finding of the run new or unchanged against the baseline: in file order,
// each key accepts as many findings as its count, and the rest are new.
func (b *Baseline) Apply(files []FileResult, root, wd string) {
	left := map[baselineKey]int{}
	for _, e := range b.Findings {
		left[baselineKey{e.Code, e.File, e.Metric}] += e.Count
	}
	for i := range files {
		for j := range files[i].Findings {
			f := &files[i].Findings[j]
			k := keyOf(f, root, wd)
			if baselinable(f) && left[k] > 0 {
				left[k]--
				f.Baseline = BaselineUnchanged
				continue
			}
			f.Baseline = BaselineNew
		}
	}
}
