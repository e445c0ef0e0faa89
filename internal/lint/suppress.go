package lint

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// IgnoreFileName is the repository-level ignore file kvcheck lint reads from the working
// directory when --ignore-file is not given.
const IgnoreFileName = ".kvcheckignore"

// IgnoreRule is one line of an ignore file: CODE [PATH-GLOB] [# reason]. CODE is a finding
// code (litellm/no-affinity, metric-deprecated) or a rule id (LL-01); the glob matches the file
// path as given, or any directory prefix of it; no glob means every file.
type IgnoreRule struct {
	Code, Glob, Reason string
	Source             string // file:line of the rule
	// within, when set, decides which files the rule covers instead of Glob: a .kvcheck.yaml
	// ignore's paths, relative to the config's directory (projectconfig.go).
	within func(file string) bool
	globs  []pathGlob
}

// Suppressed is a finding an inline comment or an ignore-file rule silenced.
type Suppressed struct {
	Finding
	By     string // "inline" or the ignore file's file:line
	Reason string
}

// WarnUnknownCodes warns of every ignore rule whose code no lint finding carries: a typo would
// do nothing without a word, as .kvcheck.yaml's checkCode warns. lint and assess --config both
// read the ignore file.
func WarnUnknownCodes(rules []IgnoreRule, warn func(format string, args ...any)) {
	for _, r := range rules {
		if !knownCode(r.Code) {
			warn("%s: no lint finding has code %q (see the codes in the README's lint section), so this rule does nothing", r.Source, r.Code)
		}
	}
}

// LoadIgnore reads the ignore file a run was given (--ignore-file), or IgnoreFileName in the
// working directory when name is empty and that file exists.
func LoadIgnore(name string) ([]IgnoreRule, error) {
	explicit := name != ""
	if !explicit {
		name = IgnoreFileName
	}
	f, err := os.Open(name)
	if err != nil {
		if !explicit && os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("--ignore-file: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	src, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile+1))
	if err != nil {
		return nil, fmt.Errorf("--ignore-file: %w", err)
	}
	if len(src) > maxIgnoreFile {
		return nil, fmt.Errorf("--ignore-file %s: larger than %d KiB: an ignore file holds one rule a line (CODE [PATH-GLOB] [# reason])", name, maxIgnoreFile>>10)
	}
	return ParseIgnore(name, src)
}

// maxIgnoreFile bounds the ignore file read: a few hundred rules take a few KB.
const maxIgnoreFile = 1 << 20

// ParseIgnore reads an ignore file.
func ParseIgnore(name string, src []byte) ([]IgnoreRule, error) {
	var out []IgnoreRule
	sc := bufio.NewScanner(bytes.NewReader(src))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rule, reason, _ := strings.Cut(line, "#")
		fields := strings.Fields(rule)
		if len(fields) > 2 {
			return nil, fmt.Errorf("%s:%d: want CODE [PATH-GLOB] [# reason], got %q", name, n, line)
		}
		r := IgnoreRule{Code: fields[0], Reason: strings.TrimSpace(reason), Source: fmt.Sprintf("%s:%d", name, n)}
		if len(fields) == 2 {
			r.Glob = fields[1]
			if _, err := path.Match(r.Glob, ""); err != nil {
				return nil, fmt.Errorf("%s:%d: bad glob %q: %w", name, n, r.Glob, err)
			}
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

func (r IgnoreRule) matches(f *Finding) bool {
	if !codeMatches(r.Code, f) {
		return false
	}
	if r.within != nil {
		return r.within(f.File)
	}
	if len(r.globs) > 0 {
		return anyGlob(r.globs, filepath.ToSlash(filepath.Clean(f.File))) != nil
	}
	if r.Glob == "" {
		return true
	}
	p := filepath.ToSlash(filepath.Clean(f.File))
	for {
		if ok, _ := path.Match(r.Glob, p); ok {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

func codeMatches(code string, f *Finding) bool {
	return strings.EqualFold(code, f.Code) || (f.Rule != "" && strings.EqualFold(code, f.Rule))
}

// inlineIgnores finds every kvcheck:ignore directive of a file in one pass and returns, by
// line, the text after the first on the line. Looking each finding's line up instead of
// copying and searching the line per finding keeps a minified file (one line of megabytes,
// thousands of findings) linear.
func inlineIgnores(src []byte) map[int]string {
	const directive = "kvcheck:ignore"
	var out map[int]string
	lines := newLineIndex(nil)
	for off := 0; ; {
		i := bytes.Index(src[off:], []byte(directive))
		if i < 0 {
			return out
		}
		at := off + i
		if out == nil {
			out = map[int]string{}
			lines = newLineIndex(src)
		}
		line, _ := lines.pos(at)
		end := len(src)
		if line < len(lines.starts()) {
			end = lines.starts()[line]
		}
		if _, seen := out[line]; !seen {
			out[line] = string(src[at+len(directive) : end])
		}
		off = end
	}
}

// inlineIgnore looks for kvcheck:ignore CODE[,CODE] reason on a finding's line or the line
// above, in any comment syntax (# or //); not in JSON, which has none (descriptionIgnore).
func inlineIgnore(ignores map[int]string, f *Finding) (string, bool) {
	for _, l := range []int{f.Line, f.Line - 1} {
		rest, ok := ignores[l]
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		for _, c := range strings.Split(fields[0], ",") {
			if codeMatches(c, f) {
				return strings.Join(fields[1:], " "), true
			}
		}
	}
	return "", false
}

// Suppress moves the findings silenced by inline comments or by ignore rules from Findings to
// Suppressed; they are counted, never dropped.
func Suppress(results []FileResult, rules []IgnoreRule) {
	for i := range results {
		r := &results[i]
		if len(r.Findings) == 0 {
			continue
		}
		kept := r.Findings[:0]
		for _, f := range r.Findings {
			if reason, ok := inlineIgnore(r.ignores.lines, &f); ok {
				r.Suppressed = append(r.Suppressed, Suppressed{Finding: f, By: "inline", Reason: reason})
				continue
			}
			if by, reason, ok := descriptionIgnore(r.ignores.descriptions, &f); ok {
				r.Suppressed = append(r.Suppressed, Suppressed{Finding: f, By: by, Reason: reason})
				continue
			}
			matched := false
			for _, ir := range rules {
				if ir.matches(&f) {
					r.Suppressed = append(r.Suppressed, Suppressed{Finding: f, By: ir.Source, Reason: ir.Reason})
					matched = true
					break
				}
			}
			if !matched {
				kept = append(kept, f)
			}
		}
		r.Findings = kept
	}
}

// ignores are a file's kvcheck:ignore directives, read when the file is linted so that its
// text need not be kept until Suppress runs (after the checks across files, which add
// findings of their own): lines holds, by line, the text after the directive in a file with
// comments; descriptions holds, by JSON pointer, the "description" strings holding one in a
// JSON file. Both are nil for a file without a directive.
type ignores struct {
	lines        map[int]string
	descriptions map[string]string
}

// ignoresOf reads a file's directives.
func ignoresOf(src []byte, formats []Format) ignores {
	lines := inlineIgnores(src)
	if len(lines) == 0 {
		return ignores{}
	}
	if !isJSONFile(formats) {
		return ignores{lines: lines}
	}
	// JSON has no comments: a directive there is inside a string, and only a description's
	// silences anything (its object's findings, not the next line's).
	root, err := parseJSON(src)
	if err != nil {
		return ignores{}
	}
	d := map[string]string{}
	descriptionsOf(root, "", d)
	return ignores{descriptions: d}
}

// descriptionsOf records, under its JSON pointer, the description of every object at or under
// n that holds a directive. A key written twice is followed to its first value, as lookups by
// key are (jsonNode.get).
func descriptionsOf(n *jsonNode, ptr string, out map[string]string) {
	switch n.kind {
	case 'o':
		if d := n.get("description"); d != nil && d.kind == 's' && strings.Contains(d.str, "kvcheck:ignore") {
			out[ptr] = strings.Clone(d.str) // a substring would keep the file's text
		}
		for i, k := range n.keys {
			if slices.Index(n.keys, k) == i {
				descriptionsOf(n.kids[i], ptr+"/"+pointerToken(k), out)
			}
		}
	case 'a':
		for i, k := range n.kids {
			descriptionsOf(k, ptr+"/"+strconv.Itoa(i), out)
		}
	}
}

// isJSONFile reports a file read as JSON (a dashboard), whose comments cannot be written.
func isJSONFile(fs []Format) bool {
	return len(fs) == 1 && (fs[0] == FormatGrafana || fs[0] == FormatGCM || fs[0] == FormatPerses || fs[0] == FormatJSON)
}

// descriptionIgnore looks for kvcheck:ignore CODE[,CODE] reason in the "description" of the
// objects enclosing a finding in a JSON file, the nearest first: a Grafana panel's (or a row's,
// or a library panel's) description silences the panel's findings, the dashboard's the whole
// file's. JSON has no comments, and a description is where Grafana lets people write.
// descriptions are the file's, by pointer (descriptionsOf); a finding's pointer is written as
// lint writes them (array indexes in decimal, keys escaped by RFC 6901), so its prefixes name
// the enclosing objects.
func descriptionIgnore(descriptions map[string]string, f *Finding) (by, reason string, ok bool) {
	if len(descriptions) == 0 {
		return "", "", false
	}
	ptrs := []string{""}
	cur := ""
	for _, tok := range splitPointer(f.Pointer) {
		cur += "/" + pointerToken(tok)
		ptrs = append(ptrs, cur)
	}
	for i := len(ptrs) - 1; i >= 0; i-- {
		d, found := descriptions[ptrs[i]]
		if !found {
			continue
		}
		_, rest, _ := strings.Cut(d, "kvcheck:ignore")
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		for _, c := range strings.Split(fields[0], ",") {
			if codeMatches(c, f) {
				where := "the description of " + cmpOr(ptrs[i], "the dashboard")
				return where, strings.Join(fields[1:], " "), true
			}
		}
	}
	return "", "", false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
