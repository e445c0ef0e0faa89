package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/files"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// Template is the verdict on one template or prompt file.
type Template struct {
	File   string
	Format string // jinja, python, text, tokenizer_config, config (a YAML or JSON file carrying templates)
	// Verdict is the worst case: every variable nothing settles taken to change as often as
	// it plausibly could (what --fail-on acts on). Best takes each of them as fixed per
	// deployment; Assumptions name what separates the two.
	Verdict     Verdict
	Best        Verdict
	Assumptions []string
	// Rendered says how the template was rendered offline ("" when it is not a chat
	// template); RenderError is why the engine could not, in which case the positions are
	// the static scanner's estimate.
	Rendered    string
	RenderError string
	// Divergences are the renders' pairs that differ, tool order included.
	Divergences []Divergence
	// Embedded says, for a configuration file, where each chat template it carries is: its
	// key path and the line its text starts on.
	Embedded []string
	// assumed are the notes of --assume on this template's variables, kept when the
	// verdicts are judged again (Corroborate).
	assumed []string
}

// TemplateReport is the static audit of a set of templates.
type TemplateReport struct {
	Templates []Template
	Findings  []Finding
	// UnusedAssume are the --assume names that matched no unsettled variable.
	UnusedAssume []string
	// Skipped are the files of a directory that looked like configurations carrying a chat
	// template but could not be read as YAML or JSON (a Helm chart's templates/, which are
	// Go templates), each with why.
	Skipped []string
}

// TemplateOptions are the inputs of a template audit beyond the paths.
type TemplateOptions struct {
	BlockSize int
	// Code are directories whose Python code fills the templates' variables (--code).
	Code []string
	// Assume settles variables nothing else does (--assume NAME=CLASS).
	Assume map[string]Frequency
	// Counter counts the tokens of a rendered prefix: nil estimates, a vLLM server is exact.
	Counter PrefixCounter
}

// maxTemplateBytes bounds one template file: templates and prompt modules are small; anything
// larger is not one.
const maxTemplateBytes = 16 << 20

// AuditTemplates audits template files and directories with the estimate and no options
// (AuditTemplatesWith takes them).
func AuditTemplates(paths []string, blockSize int) (TemplateReport, error) {
	return AuditTemplatesWith(context.Background(), paths, TemplateOptions{BlockSize: blockSize})
}

// AuditTemplatesWith audits template files and directories. A directory is one unit: a
// placeholder in one Python file and the code that fills it in another are matched, and so
// are the fillers in the --code directories. Files of unknown type inside a directory are
// ignored; a file named explicitly must be of a known type. Chat templates are rendered
// offline for exact character positions.
func AuditTemplatesWith(ctx context.Context, paths []string, o TemplateOptions) (TemplateReport, error) {
	blockSize := o.BlockSize
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	o.BlockSize = blockSize
	rep := TemplateReport{Templates: []Template{}, Findings: []Finding{}}
	var code []pyFiller
	for _, dir := range o.Code {
		fs, skipped, err := codeFillers(ctx, dir)
		if err != nil {
			return rep, err
		}
		code = append(code, fs...)
		rep.Skipped = append(rep.Skipped, skipped...)
	}
	assumed := map[string]bool{}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return rep, fmt.Errorf("template %s: %w", p, err)
		}
		var files []string
		if info.IsDir() {
			var skipped []string
			files, skipped, err = walkFiles(ctx, p, func(path string) (bool, error) {
				switch f := formatOf(path); f {
				case "":
					return false, nil
				case "config":
					// A configuration is audited only when it carries a chat template.
					src, err := readTemplate(path)
					if err != nil {
						return false, err
					}
					return holdsChatTemplate(src), nil
				}
				return true, nil
			})
			if err != nil {
				return rep, fmt.Errorf("walk %s: %w", p, err)
			}
			rep.Skipped = append(rep.Skipped, skipped...)
			if len(files) == 0 {
				return rep, fmt.Errorf("template directory %s holds no template (.jinja, .j2, .py, .txt, .md, .prompt, tokenizer_config.json, or YAML and JSON configurations carrying a chat template)", p)
			}
		} else {
			if formatOf(p) == "" {
				return rep, fmt.Errorf("template %s: unknown type: use .jinja/.j2 chat templates, tokenizer_config.json, .py prompt modules, .txt/.md/.prompt text, or a YAML or JSON configuration that carries a chat template", p)
			}
			files = []string{p}
		}
		u, err := auditUnit(ctx, files, code, o, assumed, info.IsDir())
		if err != nil {
			return rep, err
		}
		rep.Templates = append(rep.Templates, u.Templates...)
		rep.Findings = append(rep.Findings, u.Findings...)
		rep.Skipped = append(rep.Skipped, u.Skipped...)
	}
	for name := range o.Assume {
		if !assumed[name] {
			rep.UnusedAssume = append(rep.UnusedAssume, name)
		}
	}
	slices.Sort(rep.UnusedAssume)
	return rep, nil
}

// codeFillers reads the fillers of every Python file under dir (--code): the calls,
// constants and fields that fill template variables.
func codeFillers(ctx context.Context, dir string) ([]pyFiller, []string, error) {
	var out []pyFiller
	_, skipped, err := walkFiles(ctx, dir, func(path string) (bool, error) {
		if !strings.HasSuffix(path, ".py") {
			return false, nil
		}
		src, err := readTemplate(path)
		if err != nil {
			return false, err
		}
		_, f := pyScan(path, src)
		out = append(out, f...)
		return true, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("--code %s: %w", dir, err)
	}
	return out, skipped, nil
}

// walkFiles walks dir as every command walks its inputs (files.Walker: links to files and
// to directories followed with loop detection, a ConfigMap mount's files read once under
// their visible names, hidden directories skipped), and returns the files keep keeps, in
// lexical order, and each skip that may hide a template (a broken link, a loop, a pipe or a
// device in the tree) as "path: reason". A directory named through a link was walked as no
// directory before: "holds no template".
func walkFiles(ctx context.Context, dir string, keep func(path string) (bool, error)) (kept, skipped []string, err error) {
	var w files.Walker
	err = w.Walk(ctx, dir, func(path string, _ files.Kind, _ bool, _ int64) error {
		ok, err := keep(path)
		if ok {
			kept = append(kept, path)
		}
		return err
	}, func(s files.Skip) {
		if s.Problem {
			skipped = append(skipped, s.Path+": "+s.Reason)
		}
	})
	return kept, skipped, err
}

// formatOf names the scanner for a path, or "" when none applies.
func formatOf(path string) string {
	base := strings.ToLower(filepath.Base(path))
	switch {
	case base == "tokenizer_config.json" || strings.HasSuffix(base, "tokenizer_config.json"):
		return "tokenizer_config"
	case strings.HasSuffix(base, ".jinja"), strings.HasSuffix(base, ".j2"), strings.HasSuffix(base, ".jinja2"):
		return "jinja"
	case strings.HasSuffix(base, ".py"):
		return "python"
	case strings.HasSuffix(base, ".txt"), strings.HasSuffix(base, ".md"), strings.HasSuffix(base, ".prompt"):
		return "text"
	case strings.HasSuffix(base, ".yaml"), strings.HasSuffix(base, ".yml"), strings.HasSuffix(base, ".json"):
		return "config"
	}
	return ""
}

func readTemplate(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("template %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only
	// The size is checked on what is read, not on what Stat says: a pipe or a device (a
	// process substitution, /dev/zero) has no size and would be read without end.
	b, err := io.ReadAll(io.LimitReader(f, maxTemplateBytes+1))
	if err != nil {
		return "", fmt.Errorf("template %s: %w", path, err)
	}
	if len(b) > maxTemplateBytes {
		return "", fmt.Errorf("template %s: more than %d bytes is too large for a template (limit %d)", path, maxTemplateBytes, maxTemplateBytes)
	}
	// A UTF-8 byte order mark (Notepad, PowerShell) is no part of the text: a
	// tokenizer_config.json that starts with one is otherwise not JSON, and a prompt's
	// positions would count it.
	return string(bytes.TrimPrefix(b, utf8BOM)), nil
}

// auditUnit audits files that belong together. code are fillers from --code directories.
//
// walked says the files come from a directory: a configuration there that cannot be read is
// skipped and named, where one named on the command line is an error.
func auditUnit(ctx context.Context, files []string, code []pyFiller, o TemplateOptions, assumed map[string]bool, walked bool) (TemplateReport, error) {
	var rep TemplateReport
	bs := o.BlockSize
	byFile := map[string][]Finding{}
	formats := map[string]string{}
	renders := map[string]*Template{}
	var prompts []pyPrompt
	fillers := append([]pyFiller(nil), code...)
	for _, path := range files {
		src, err := readTemplate(path)
		if err != nil {
			return rep, err
		}
		format := formatOf(path)
		formats[path] = format
		switch format {
		case "jinja", "tokenizer_config", "config":
			named := []namedTemplate{{src: src}}
			switch format {
			case "tokenizer_config":
				if named, err = tokenizerTemplates(path, src); err != nil {
					return rep, err
				}
			case "config":
				named, err = configTemplates(path, src)
				switch {
				case err != nil && walked:
					rep.Skipped = append(rep.Skipped, err.Error())
					continue
				case err != nil:
					return rep, err
				case len(named) == 0 && walked:
					continue
				case len(named) == 0:
					return rep, fmt.Errorf("template %s: no chat template in it: a YAML or JSON configuration is audited for the chat templates its strings carry (a string with a Jinja tag that reads messages: production-stack's chatTemplateConfigMap, a ConfigMap's chat_template.jinja, an inline --chat-template)", path)
				}
			}
			t := &Template{}
			renders[path] = t
			for _, n := range named {
				prefix := ""
				if n.name != "" && (format != "config" || len(named) > 1) {
					prefix = n.name + ": "
				}
				if n.at > 0 {
					t.Embedded = append(t.Embedded, fmt.Sprintf("%s (line %d)", n.name, n.at))
				}
				fs := scanJinja(path, n.src, bs)
				for i := range fs {
					fs[i].Expression = prefix + fs[i].Expression
				}
				rr := renderChatTemplate(ctx, n.src, freeVariables(n.src), bs, o.Counter)
				exact := o.Counter != nil && o.Counter.Exact()
				fs = reconcile(path, n.src, prefix, fs, rr, bs, exact)
				for i := range fs {
					fs[i].Line = n.fileLine(fs[i].Line)
				}
				if rr.Err != nil {
					t.RenderError = strings.TrimSpace(prefix + rr.Err.Error())
				} else {
					t.Rendered = fmt.Sprintf("offline, %d of %d conversations", len(rr.Variants), len(renderVariants))
					for _, d := range rr.Divergences {
						if prefix != "" {
							d.Pair = prefix + d.Pair
						}
						t.Divergences = append(t.Divergences, d)
					}
				}
				byFile[path] = append(byFile[path], fs...)
			}
		case "python":
			p, f := pyScan(path, src)
			prompts = append(prompts, p...)
			fillers = append(fillers, f...)
		case "text":
			prompts = append(prompts, pyPrompt{file: path, line: 1, text: src, holds: placeholders(src, 1, false)})
		}
	}
	for path, fs := range promptFindings(prompts, resolveAliases(fillers), bs) {
		byFile[path] = append(byFile[path], fs...)
	}
	for _, path := range files {
		var fs []Finding
		var notes []string
		for _, f := range byFile[path] {
			settleByText(&f)
			if keep, note := settleByAssumption(&f, o.Assume, assumed); note != "" {
				notes = append(notes, note)
				if !keep {
					continue
				}
			}
			f.finish(fmt.Sprintf("%s:%d", f.File, f.Line))
			fs = append(fs, f)
		}
		slices.SortStableFunc(fs, func(a, b Finding) int { return a.Line - b.Line })
		t := Template{File: path, Format: formats[path], assumed: dedupe(notes)}
		t.judge(fs)
		if r := renders[path]; r != nil {
			t.Rendered, t.RenderError, t.Divergences, t.Embedded = r.Rendered, r.RenderError, r.Divergences, r.Embedded
		} else if formats[path] == "config" {
			continue // skipped above: it carries no template, or could not be read
		}
		rep.Templates = append(rep.Templates, t)
		rep.Findings = append(rep.Findings, fs...)
	}
	return rep, nil
}

// settleByText settles a variable that nothing else does by what the words before it say
// ("Your session started on", "Today is", "User:"): a class of its own, the evidence the
// text.
func settleByText(f *Finding) {
	if f.Evidence.known() || f.lead == "" {
		return
	}
	k, fr, phrase, ok := textEvidence(f.lead)
	if !ok {
		return
	}
	f.Kind, f.Frequency, f.Evidence = k, fr, EvidenceText
	said := fmt.Sprintf("the text before it says %q: it changes %s", phrase, classWord(fr))
	if f.Origin != "" {
		said = f.Origin + "; " + said
	}
	f.Origin = said
}

// settleByAssumption applies --assume to a variable nothing else settles. It returns whether
// the finding stays (a variable assumed fixed loses nothing and goes) and the note that says
// what was assumed ("" when nothing was).
func settleByAssumption(f *Finding, assume map[string]Frequency, used map[string]bool) (bool, string) {
	if f.Evidence.known() || len(assume) == 0 {
		return true, ""
	}
	name := assumeName(f)
	cls, ok := assume[name]
	if !ok {
		return true, ""
	}
	used[name] = true
	note := fmt.Sprintf("%s changes %s (--assume %s)", name, classWord(cls), name)
	if cls == Fixed {
		return false, note
	}
	f.Frequency, f.Evidence = cls, EvidenceAssumed
	if k, _ := classifyName(name); f.Kind == KindVariable && k != KindVariable {
		f.Kind = k
	}
	f.Origin = strings.TrimPrefix(f.Origin+"; assumed with --assume "+name, "; ")
	return true, note
}

// namedTemplate is one chat template of a file: a tokenizer_config.json may hold several, a
// configuration file carries them in its strings.
type namedTemplate struct {
	name, src string
	// at is the file line the template's text starts on (0: the file is the template);
	// exact says the template's lines follow it one for one (a YAML literal block), else
	// every finding is placed on line at.
	at    int
	exact bool
}

// fileLine is the line of the file that holds line l of the template.
func (n namedTemplate) fileLine(l int) int {
	switch {
	case n.at == 0:
		return l
	case n.exact:
		return n.at + l - 1
	}
	return n.at
}

// verdictOf decides a template's verdicts from its findings: the worst position among them,
// each unsettled variable taken to change (worst), and among the settled ones only (best);
// clean without findings.
func verdictOf(fs []Finding) (worst, best Verdict) {
	worst, best = VerdictClean, VerdictClean
	for _, f := range fs {
		if r := f.Position.rank(); r > Position(worst).rank() {
			worst = Verdict(f.Position)
		}
		if r := f.BestPosition.rank(); f.BestPosition != "" && r > Position(best).rank() {
			best = Verdict(f.BestPosition)
		}
	}
	return worst, best
}

// promptFindings turns prompt placeholders into findings, resolving each name against the
// unit's fillers; a filler that feeds a prompt in another file gets its own finding there,
// and one that feeds no prompt in view is reported with an unknown position.
func promptFindings(prompts []pyPrompt, fillers []pyFiller, bs int) map[string][]Finding {
	out := map[string][]Finding{}
	used := map[int]bool{}
	for _, p := range prompts {
		for _, h := range p.holds {
			if h.input {
				continue
			}
			var kind Kind
			var freq Frequency
			var ev Evidence
			origin, why := "", ""
			fi, unseen := -1, -1
			if h.name != "" {
				for i, f := range fillers {
					if f.name != h.name {
						continue
					}
					if f.unseen {
						if unseen < 0 {
							unseen = i
						}
						continue
					}
					fi = i
					break
				}
			}
			if fi >= 0 && fillers[fi].freq == Fixed {
				// Filled with a literal or a config constant: fixed per deployment.
				used[fi] = true
				continue
			}
			switch {
			case fi >= 0:
				f := fillers[fi]
				kind, freq, ev, why = f.kind, f.freq, f.ev, f.why
				origin = fmt.Sprintf("%s:%d %s", filepath.Base(f.file), f.line, f.expr)
				if f.module {
					origin += " (a module constant, computed at import: it changes with the format's field whenever a process starts)"
				}
				used[fi] = true
			case h.name == "":
				k, fr, ok := classifyExpr(h.expr)
				if !ok {
					continue
				}
				kind, freq, ev = k, fr, nameEvidence(k)
				if dynamicCall(h.expr) {
					ev = EvidenceCode
				}
				if k == KindClock {
					why = clockWhy(h.expr)
				}
			default:
				kind, freq = classifyName(h.name)
				ev = nameEvidence(kind)
				if unseen >= 0 {
					u := fillers[unseen]
					used[unseen] = true
					origin = fmt.Sprintf("%s:%d %s, whose value is not among the inputs", filepath.Base(u.file), u.line, u.expr)
				}
			}
			variable := ""
			if fi < 0 && h.name != "" {
				variable = h.name
			}
			pos, block := place(h.before, bs, true, h.before >= h.after && h.before > 0)
			out[p.file] = append(out[p.file], Finding{Finding: finding.Finding{File: p.file, Line: h.line}, Expression: h.expr, Kind: kind, Position: pos, Block: block,
				TokensBefore: h.before, Frequency: freq, Estimated: true, Origin: origin, Evidence: ev, Variable: variable, Render: why, lead: h.lead})
			if fi >= 0 && fillers[fi].file != p.file {
				f := fillers[fi]
				out[f.file] = append(out[f.file], Finding{Finding: finding.Finding{File: f.file, Line: f.line}, Expression: f.expr, Kind: f.kind, Position: pos, Block: block,
					TokensBefore: h.before, Frequency: f.freq, Estimated: true, Origin: fmt.Sprintf("fills %s at %s:%d", h.expr, filepath.Base(p.file), h.line), Evidence: f.ev, Render: f.why})
			}
		}
	}
	for i, f := range fillers {
		// A local passed on (content=system_message) is reported where it is computed, if
		// anywhere: the call that built it is a filler of its own.
		if used[i] || f.freq == Fixed || f.viaLocal || f.unseen || !reFillCall.MatchString(f.call) {
			continue
		}
		out[f.file] = append(out[f.file], Finding{Finding: finding.Finding{File: f.file, Line: f.line, Fix: "audit this file together with the prompt it fills (pass their directory); " + fixFor(f.kind, f.freq, Early)},
			Expression: f.expr, Kind: f.kind, Position: PositionUnknown, Block: -1, Frequency: f.freq, Estimated: true, Origin: fmt.Sprintf("fills %q through %s()", f.name, f.call), Evidence: f.ev, Render: f.why})
	}
	return out
}

// Corroborate settles the questions of a template audit with a request log: a variable whose
// preceding text stands where the log's requests differ on a generated value (a date, an id, a
// number) is shown to change by the traffic itself. Its finding is judged again with that
// evidence, and so is its template's verdict. source names the log.
func Corroborate(rep *TemplateReport, s Summary, source string) {
	changed := map[string]bool{}
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if f.Evidence.known() {
			continue
		}
		st := siteOf(f.lead, s.Sites)
		if st == nil {
			continue
		}
		switch st.Cause {
		case "date/time":
			f.Kind, f.Frequency = KindDate, timeFrequency(st.Example)
		case "uuid":
			f.Kind, f.Frequency = KindID, PerCall
		case "id":
			f.Kind = KindID
		default:
			f.Kind = KindVariable
		}
		if f.Kind != KindUser && f.Frequency == PerUser {
			f.Frequency = Unknown
		}
		f.Evidence, f.Fix = EvidenceLog, "" // the question's fix gives way to the remedy
		f.Origin = fmt.Sprintf("%s: %d requests differ there (%s at %s, e.g. %q)", source, st.Count, st.Cause, st.Where(), st.Example)
		f.finish(f.Subject)
		changed[f.File] = true
	}
	for i, t := range rep.Templates {
		if !changed[t.File] {
			continue
		}
		var fs []Finding
		for _, f := range rep.Findings {
			if f.File == t.File {
				fs = append(fs, f)
			}
		}
		rep.Templates[i].judge(fs)
	}
}

// judge sets a template's verdicts from its findings, and the assumptions that separate
// them: for each variable nothing settles, the template's verdict if it changes as often as
// it plausibly could and if it is fixed per deployment, the other findings as they are (a
// template whose dated header is early either way reads "breaker if agent_name changes per
// user; early if it is fixed per deployment", not "clean"). A variable whose worst case
// leaves the verdict as it is separates nothing and is named only in its finding.
func (t *Template) judge(fs []Finding) {
	worst, best := verdictOf(fs)
	t.Verdict, t.Best = worst, best
	notes := slices.Clone(t.assumed)
	for _, f := range fs {
		if f.Assumption == "" {
			continue
		}
		under := best
		if f.Position.rank() > Position(best).rank() {
			under = Verdict(f.Position)
		}
		if under == best {
			continue
		}
		name := f.Variable
		if name == "" {
			name = f.Expression
		}
		notes = append(notes, fmt.Sprintf("%s if %s changes %s; %s if it is fixed per deployment",
			positionWord(Position(under)), name, classWord(worstClass(&f)), positionWord(Position(best))))
	}
	t.Assumptions = dedupe(notes)
}

var (
	reFracTime = regexp.MustCompile(`\d{1,2}:\d{2}:\d{2}[.,]\d`)
	reSecTime  = regexp.MustCompile(`\d{1,2}:\d{2}:\d{2}`)
	reMinTime  = regexp.MustCompile(`\d{1,2}:\d{2}`)
)

// timeFrequency reads how often a logged time value changes from the finest field it shows:
// fractions of a second change per call, seconds per second, minutes per minute, a bare date
// daily.
func timeFrequency(example string) Frequency {
	switch {
	case reFracTime.MatchString(example):
		return PerCall
	case reSecTime.MatchString(example):
		return PerSecond
	case reMinTime.MatchString(example):
		return PerMinute
	}
	return Daily
}

// siteOf finds the divergence site, on a generated value, whose text holds the end of lead:
// its last 12 characters or, since a site's text starts a little before the difference, at
// least its last 6.
func siteOf(lead string, sites []Site) *Site {
	if len(strings.TrimSpace(lead)) < 6 {
		return nil
	}
	for i := range sites {
		st := &sites[i]
		if st.Cause == "text" || st.Cause == "token ids" {
			continue
		}
		for k := min(12, len(lead)); k >= 6; k-- {
			if tail := lead[len(lead)-k:]; strings.TrimSpace(tail) != "" && strings.Contains(st.Example, tail) {
				return st
			}
		}
	}
	return nil
}

// tokenizerTemplates reads the chat_template of a tokenizer_config.json: a string, or a list
// of {name, template}.
func tokenizerTemplates(path, src string) ([]namedTemplate, error) {
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal([]byte(src), &cfg); err != nil {
		return nil, fmt.Errorf("template %s: invalid JSON: %w", path, err)
	}
	if len(cfg.ChatTemplate) == 0 || string(cfg.ChatTemplate) == "null" {
		return nil, fmt.Errorf("template %s: no chat_template field", path)
	}
	var one string
	if err := json.Unmarshal(cfg.ChatTemplate, &one); err == nil {
		return []namedTemplate{{src: one}}, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(cfg.ChatTemplate, &named); err != nil {
		return nil, fmt.Errorf("template %s: chat_template is neither a string nor a list of {name, template}", path)
	}
	if len(named) == 0 {
		return nil, errors.New("template " + path + ": chat_template list is empty")
	}
	out := make([]namedTemplate, 0, len(named))
	for _, n := range named {
		out = append(out, namedTemplate{name: n.Name, src: n.Template})
	}
	return out, nil
}
