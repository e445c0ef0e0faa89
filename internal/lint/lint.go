package lint

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/aibrix"
	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/textpos"
)

// Status values of a finding, as JSON carries them.
const (
	StatusRemoved    = "removed"
	StatusHidden     = "hidden"
	StatusDeprecated = "deprecated"
	StatusUnknown    = "unknown"
	StatusLabelDrift = "label-drift"
	StatusUnparsed   = "unparsed"
	StatusSkipped    = "skipped"
	StatusAbsent     = "absent" // online: no series within the lookback
	StatusStale      = "stale"  // online: series seen within the lookback, none now
)

// Codes of the findings, stable for CI suppression lists.
const (
	CodeRemoved    = "metric-removed"
	CodeHidden     = "metric-hidden"
	CodeDeprecated = "metric-deprecated"
	CodeUnknown    = "metric-unknown"
	CodeLabelDrift = "label-drift"
	CodeUnparsed   = "query-unparsed"
	CodeSkipped    = "file-skipped"
	CodeAbsent     = "series-absent"
	CodeStale      = "series-stale"
)

// Finding is one reference to a vLLM metric that will not work as intended, or a query that
// could not be checked.
//
// The embedded finding holds the file, line and column of the reference, and its Pointer, the
// JSON pointer (RFC 6901) of the string holding the query, for JSON and YAML files alike (empty
// for text files).
type Finding struct {
	finding.Finding
	// Location names the query for a person: a panel and its query, a rule, a trigger.
	Location    string
	Metric      string // the name as written, or the regex for a __name__ regex
	Status      string
	Since       string // the version where the status began
	Replacement string
	// Fixed is true when --fix rewrote (or --diff would rewrite) this reference.
	Fixed bool
	// fix is the exact rewrite, when there is one, while the file is linted; exact says there
	// was one once the file's lint is done (its site holds the file's parse, not kept).
	fix   *edit
	exact bool
	// cfgFix says a config finding has an exact rewrite, checked by linting the result;
	// cfgEdits are the rewrite.
	cfgFix   bool
	cfgEdits []fileEdit
}

// Fixable reports whether the finding has an exact rewrite.
func (f *Finding) Fixable() bool { return f.fix != nil || f.exact || f.cfgFix }

// Format is the detected kind of an input file.
type Format string

// The formats lint recognises by content.
const (
	FormatGrafana      Format = "grafana-dashboard"
	FormatGCM          Format = "cloud-monitoring-dashboard"
	FormatJSON         Format = "json"
	FormatPerses       Format = "perses-dashboard"
	FormatRules        Format = "prometheus-rules"
	FormatKEDA         Format = "keda-scaledobject"
	FormatHPA          Format = "hpa"
	FormatAdapter      Format = "prometheus-adapter"
	FormatAIBrix       Format = Format(aibrix.FormatPodAutoscaler)
	FormatYAML         Format = "yaml"
	FormatHelmTemplate Format = "helm-template"
	FormatExposition   Format = "metrics-exposition" // a saved /metrics page: not checked
	FormatText         Format = "text"
)

// FileResult is what linting one file found.
type FileResult struct {
	Path     string
	Formats  []Format // one per YAML document; one for other files
	Queries  int      // queries and names checked
	Findings []Finding
	// Fixed is the rewritten content when fixes apply and Options.Rewrite is set; nil when
	// nothing changed.
	Fixed []byte
	// Original is the file content, kept for --diff: File sets it, Paths and Read keep it
	// only with Options.Rewrite or Options.KeepText.
	Original []byte
	// Refs are the vLLM metric names the file's queries select, each at its first
	// occurrence, for the online check; with Options.Refs only.
	Refs []Ref
	// Records are the names of the recording rules the file defines.
	Records []string
	// Suppressed are the findings an inline kvcheck:ignore comment or an ignore-file rule
	// silenced; they are counted, not reported.
	Suppressed []Suppressed
	// Families are the catalog families (vllm, llm-d, ...) whose metric names the file uses,
	// in the catalog's order.
	Families []string
	// config is what the file tells the config checks across files.
	config *config.Facts
	// skip is the Skipped class of a file not checked ("" for one checked).
	skip string
	// ignores are the file's kvcheck:ignore directives, for Suppress.
	ignores ignores
}

// Ref is where a file first selects a metric name.
type Ref struct {
	Name              string
	Line, Column      int
	Pointer, Location string
}

// Options configure a Linter.
type Options struct {
	// Target is the vLLM version to judge against; zero means the catalog's newest.
	Target catalog.Version
	// Targets are the releases of each family to judge against (vllm, llm-d, gaie); a
	// family not named is judged against its newest known release. Target, when set, wins
	// for vllm.
	Targets catalog.Targets
	// MaxFileSize bounds the bytes read from one file; bigger files are not read and get a
	// file-skipped error (a CI gate must not pass what was not checked). Zero means 16 MiB.
	MaxFileSize int64
	// Rewrite computes FileResult.Fixed, the content with every exact rewrite applied
	// (for --fix and --diff). Without it findings still say whether they are fixable.
	Rewrite bool
	// Ignore are the rules of a repository's ignore file.
	Ignore []IgnoreRule
	// Only, when set, keeps the files it holds (absolute, cleaned paths): lint
	// --changed-since's changed files. Others, named or found by walking, are not read.
	Only map[string]bool
	// Jobs is how many files Paths and Read read and lint at once (--jobs); zero means one
	// per CPU the process may use (GOMAXPROCS). The results are the same for any number.
	Jobs int
	// KeepText keeps each file's text in FileResult.Original for a caller that reads it
	// again (DeploymentOf); Rewrite keeps it too, for the diff. Without either, Paths and
	// Read drop a file's text once it is linted, so a run's memory does not grow with the
	// total size of its files.
	KeepText bool
	// Leave, when set, says which files a .kvcheck.yaml leaves out (its include and exclude
	// globs) and why: they are not read, named or found by walking, and are listed as skipped.
	Leave func(path string) (why string, left bool)
	// SkipUnknown treats files named like files found by walking: one that holds nothing
	// kvcheck checks is skipped and counted, not a finding, and checking nothing is no error.
	SkipUnknown bool
	// Refs keeps where each file first selects each name (FileResult.Refs) for the online
	// check (Check sets it when it asks a server).
	Refs bool
}

// Linter checks files against the catalog.
type Linter struct {
	cat     *catalog.Catalog
	target  catalog.Version
	targets catalog.Targets // per family, vllm included; explicit ones only in chosen
	chosen  map[string]bool // families the caller named a target for
	max     int64
	rewrite bool
	names   []string // every known series name, for __name__ regexes
	ignore  []IgnoreRule
	only    map[string]bool
	// jobs is how many files are read and linted at once; keepText keeps FileResult.Original.
	jobs     int
	keepText bool
	cfg      *config.Linter // the router and engine configuration checks (config.go)
	leave    func(string) (string, bool)
	skipAll  bool // Options.SkipUnknown
	refs     bool
	// interned are the metric names findings and refs hold (internName).
	internMu sync.Mutex
	interned map[string]string
	// queries keeps what checking each query found, for every site that repeats it.
	queries *queryCache
	// Left counts the files Only left out, Excluded those Leave left out.
	Left, Excluded int
}

// New returns a Linter over the catalog.
func New(cat *catalog.Catalog, opts Options) *Linter {
	t := opts.Target
	if t.IsZero() {
		t = opts.Targets[catalog.VLLM]
	}
	if t.IsZero() {
		t = cat.Newest
	}
	m := opts.MaxFileSize
	if m <= 0 {
		m = 16 << 20
	}
	targets, chosen := catalog.Targets{}, map[string]bool{}
	for f, v := range opts.Targets {
		targets[f], chosen[f] = v, true
	}
	if !opts.Target.IsZero() {
		chosen[catalog.VLLM] = true
	}
	targets[catalog.VLLM] = t
	for _, f := range cat.Families {
		if _, ok := targets[f.Name]; !ok {
			targets[f.Name] = f.Newest
		}
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	return &Linter{cat: cat, target: t, targets: targets, chosen: chosen, max: m, rewrite: opts.Rewrite, names: cat.Names(), ignore: opts.Ignore, only: opts.Only,
		jobs: jobs, keepText: opts.KeepText || opts.Rewrite, leave: opts.Leave, skipAll: opts.SkipUnknown, refs: opts.Refs, queries: newQueryCache(),
		cfg: newConfigLinter(cat, targets[catalog.VLLM], opts.Rewrite)}
}

// internName returns a copy of a metric name for a finding or a ref to keep: a substring of a
// file would keep the whole file's text, and one copy of each name serves every file that
// writes it (the first maxInterned distinct names; further ones get a copy of their own).
func (l *Linter) internName(name string) string {
	l.internMu.Lock()
	defer l.internMu.Unlock()
	if v, ok := l.interned[name]; ok {
		return v
	}
	c := strings.Clone(name)
	if l.interned == nil {
		l.interned = map[string]string{}
	}
	if len(l.interned) < maxInterned {
		l.interned[c] = c
	}
	return c
}

// maxInterned bounds the names internName keeps: far more than the catalogs' names in all
// their spellings.
const maxInterned = 1 << 14

// TargetOf returns the release a family is judged against.
func (l *Linter) TargetOf(family string) catalog.Version { return l.targets[family] }

// Targets returns the release each family is judged against.
func (l *Linter) Targets() catalog.Targets { return l.targets }

// Target returns the version findings are judged against.
func (l *Linter) Target() catalog.Version { return l.target }

// FamilyTarget is one family's release a run was judged against.
type FamilyTarget struct {
	Family  string // the catalog's key: vllm, llm-d, ...
	Display string // vLLM, llm-d-router, ...
	Version catalog.Version
}

// JudgedAgainst returns the targets of the families whose names the files use, in the
// catalog's order; vLLM's alone when the files use none (configs, or no metric names).
func (l *Linter) JudgedAgainst(files []FileResult) []FamilyTarget {
	used := map[string]bool{}
	for _, f := range files {
		for _, fam := range f.Families {
			used[fam] = true
		}
	}
	if len(used) == 0 {
		used[catalog.VLLM] = true
	}
	var out []FamilyTarget
	for _, f := range l.cat.Families {
		if used[f.Name] {
			out = append(out, FamilyTarget{Family: f.Name, Display: f.Display, Version: l.targets[f.Name]})
		}
	}
	return out
}

// keep reports whether Only lets a file be read, counting those it leaves out.
func (l *Linter) keep(path string) bool {
	if l.only == nil {
		return true
	}
	abs, err := filepath.Abs(path)
	if err == nil && l.only[abs] {
		return true
	}
	l.Left++
	return false
}

// Finish runs the checks across the files of one run and applies the suppressions; Paths calls
// it, callers that lint content with File call it on their results.
func (l *Linter) Finish(results []FileResult) []FileResult {
	l.crossConfig(results)
	for i := range results {
		slices.SortStableFunc(results[i].Findings, func(a, b Finding) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
	}
	Suppress(results, l.ignore)
	return results
}

// ForgetRecorded drops "unknown" findings about vllm: names that a recording rule among
// the results defines: those series are the user's own, not vLLM's. A retired name that a
// recording rule records (a compatibility rule that keeps old dashboards working after the
// upgrade) still returns series: its findings become info notes naming the rule, and stay
// fixable, since the rewrite makes the rule unneeded.
func ForgetRecorded(results []FileResult) []FileResult {
	recorded := map[string]string{} // name -> the file whose rule records it
	for _, r := range results {
		for _, n := range r.Records {
			if _, ok := recorded[n]; !ok {
				recorded[n] = r.Path
			}
		}
	}
	if len(recorded) == 0 {
		return results
	}
	for i := range results {
		kept := results[i].Findings[:0]
		for _, f := range results[i].Findings {
			file, ok := recorded[f.Metric]
			switch {
			case ok && f.Status == StatusUnknown:
				continue
			case ok && (f.Status == StatusRemoved || f.Status == StatusHidden || f.Status == StatusDeprecated):
				f.Severity = finding.Info
				f.Message += fmt.Sprintf("; the recording rule record %q in %s produces it, so this query keeps returning series while that rule runs", f.Metric, file)
			}
			kept = append(kept, f)
		}
		results[i].Findings = kept
	}
	return results
}

// File lints one file's content. It never fails: what cannot be read becomes a finding.
func (l *Linter) File(path string, src []byte) FileResult {
	fl := &fileLint{l: l, path: path, src: src, lines: newLineIndex(src)}
	fl.run()
	if fl.arena != nil {
		// Nothing the result holds points into the file's JSON trees (a finding's site is
		// dropped below, names and places are copies: fileLint.add, fileLint.ref).
		defer func() {
			fl.arena.release()
			jsonArenas.Put(fl.arena)
		}()
	}
	slices.SortStableFunc(fl.findings, func(a, b *Finding) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	r := FileResult{Path: path, Formats: fl.formats, Queries: fl.queries, Findings: make([]Finding, len(fl.findings)),
		Original: src, Fixed: fl.fixed, Refs: make([]Ref, 0, len(fl.refs)), Records: fl.records}
	if fl.cfg != nil {
		r.config = fl.cfg.Facts()
	}
	for i, f := range fl.findings {
		r.Findings[i] = *f
		r.Findings[i].Edits = fl.findingEdits(f, f.cfgEdits)
		r.Findings[i].fix, r.Findings[i].exact, r.Findings[i].cfgEdits = nil, f.fix != nil, nil
	}
	for _, ref := range fl.refs {
		r.Refs = append(r.Refs, ref)
	}
	slices.SortFunc(r.Refs, func(a, b Ref) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range l.cat.Families {
		if fl.families[f.Name] {
			r.Families = append(r.Families, f.Name)
		}
	}
	if r.Formats == nil {
		r.Formats = []Format{}
	}
	r.ignores = ignoresOf(src, r.Formats)
	if fl.cfg == nil {
		// Nothing the result holds points into the line index (positions are numbers); a
		// config's facts keep theirs.
		fl.lines.release()
	}
	return r
}

// lineIndex is a file's textpos.Index, made when a position is first asked: a file with no
// finding (most files of a tree of dashboards) never pays for it.
type lineIndex struct {
	src []byte
	x   *textpos.Index
}

const chunkSize = textpos.ChunkSize

func newLineIndex(src []byte) lineIndex { return lineIndex{src: src} }

// index returns the index, made on first use.
func (li *lineIndex) index() *textpos.Index {
	if li.x == nil {
		x, _ := lineIndexes.Get().(*textpos.Index)
		li.x = textpos.NewInto(li.src, x)
	}
	return li.x
}

// lineIndexes are the line indexes of files linted, kept for the next files' (release): made
// anew for every file with a finding, they were a ninth of what lint allocated on a tree of
// dashboards (38 of 335 MB).
var lineIndexes sync.Pool

// release gives the index back for another file's; nothing may use it after.
func (li *lineIndex) release() {
	if li.x != nil {
		li.x.Forget()
		lineIndexes.Put(li.x)
		li.x = nil
	}
}

// starts returns the offsets where the lines begin.
func (li *lineIndex) starts() []int { return li.index().Starts() }

// startsChar reports whether c starts a character (textpos.StartsChar).
func startsChar(c byte) bool { return textpos.StartsChar(c) }

// pos returns the 1-based line and character column of a byte offset.
func (li *lineIndex) pos(off int) (int, int) { return li.index().Pos(off) }

// offset returns the byte offset of a 1-based line and character column; a column past the
// end of its line gives the line's end.
func (li *lineIndex) offset(line, col int) int { return li.index().Offset(line, col) }
