package lint

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/aibrix"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// site is one string in a file that holds a query or a metric name, and where it lives.
type site struct {
	value    string
	pointer  string
	location string
	grafana  bool // Grafana dashboard: a rewrite uses $__rate_interval as its window

	json    *jsonNode  // the JSON string, for in-place rewrites by offset
	mirror  *jsonNode  // a copy of the value elsewhere (Grafana's definition), rewritten alike
	yaml    *yaml.Node // the YAML scalar
	yamlDoc int
	// embedded is the JSON pointer of the value inside a JSON document held by the YAML
	// scalar (a dashboard in a ConfigMap); pointer is then the scalar's path.
	embedded string
	srcStart int  // byte offset in the file where the value's source begins
	raw      bool // the value's bytes appear verbatim at srcStart
	// record marks the expr of a recording rule: a counter copied as it is stays a counter.
	record bool
}

// fileLint is the state of linting one file.
type fileLint struct {
	l        *Linter
	path     string
	src      []byte
	lines    lineIndex
	formats  []Format
	queries  int
	findings []*Finding
	refs     map[string]Ref
	families map[string]bool // the catalog families whose names the file uses
	fixed    []byte
	// orig is the file as read when src is a Helm template with its actions masked (masks
	// are the masked spans); rewrites are applied to orig.
	orig    []byte
	masks   [][2]int
	embed   *embedding // set while walking a JSON document held in a YAML scalar
	records []string   // names of the recording rules the file defines
	// cfg checks the file's router and engine configuration (config.go); cfgFound pairs each
	// of its findings with the one reported.
	cfg      *config.File
	cfgFound []configFound
	// fromJSON maps the string scalars of a JSON file walked as YAML (yamlOf) to their JSON
	// nodes; nil for other files.
	fromJSON map[*yaml.Node]*jsonNode
	// arena holds the file's JSON trees until its lint is done (jsonArena).
	arena *jsonArena
}

// embedding is a JSON document held in a YAML scalar: a Grafana dashboard in a ConfigMap's
// data or a GrafanaDashboard resource's spec.json.
type embedding struct {
	node    *yaml.Node
	pointer string
	doc     int
	loc     string
	// lineStarts are the file offsets where the scalar's lines begin, after indentation,
	// when the scalar is a literal block whose lines appear verbatim; nil otherwise.
	lineStarts []int
	start      int // file offset of the scalar
}

// offset maps an offset in the scalar's value to the file.
func (e *embedding) offset(value string, off int) int {
	if e.lineStarts == nil {
		return e.start
	}
	line := strings.Count(value[:off], "\n")
	if line >= len(e.lineStarts) {
		return e.start
	}
	return e.lineStarts[line] + off - (strings.LastIndexByte(value[:off], '\n') + 1)
}

// jsonArena returns the arena of the file's JSON trees.
func (fl *fileLint) jsonArena() *jsonArena {
	if fl.arena == nil {
		fl.arena = jsonArenas.Get().(*jsonArena)
	}
	return fl.arena
}

// ref remembers the first place a vLLM metric name is selected.
func (fl *fileLint) ref(s *site, name string, off int) {
	if !fl.l.refs {
		return
	}
	if _, ok := fl.refs[name]; ok {
		return
	}
	if _, ok := fl.l.cat.Lookup(name); !ok {
		return
	}
	if fl.refs == nil {
		fl.refs = map[string]Ref{}
	}
	line, col := fl.lines.pos(fl.locate(s, off, name))
	name = fl.l.internName(name)
	fl.refs[name] = Ref{Name: name, Line: line, Column: col, Pointer: s.pointer, Location: s.location}
}

// add records a finding about the value offset off of a site; token is the text found there,
// used to locate it in the file when the value is escaped in the source.
func (fl *fileLint) add(s *site, off int, token string, f Finding) *Finding {
	at := fl.locate(s, off, token)
	f.File, f.Subject = fl.path, fl.path
	f.Line, f.Column = fl.lines.pos(at)
	f.Pointer, f.Location = s.pointer+s.embedded, s.location
	// The metric is a copy (a substring would keep the file's text); a site's pointer and
	// location are built for it (joinPointer, fmt), never substrings.
	f.Metric = fl.l.internName(f.Metric)
	p := &f
	fl.findings = append(fl.findings, p)
	return p
}

// locate maps a value offset to a file offset. Escapes in JSON and quoted YAML shift
// positions, but metric names contain no characters that need escaping, so the k-th
// occurrence of the name in the value is the k-th occurrence in the source.
func (fl *fileLint) locate(s *site, off int, token string) int {
	if s.raw {
		return s.srcStart + off
	}
	if token == "" || off > len(s.value) {
		return s.srcStart
	}
	k := strings.Count(s.value[:off], token)
	at := s.srcStart
	for i := 0; i <= k; i++ {
		j := bytes.Index(fl.src[at:], []byte(token))
		if j < 0 {
			return s.srcStart
		}
		if i == k {
			return at + j
		}
		at += j + len(token)
	}
	return s.srcStart
}

var bom = []byte("\xef\xbb\xbf")

// run detects the format by content and extracts and checks every query.
func (fl *fileLint) run() {
	body := bytes.TrimLeft(bytes.TrimPrefix(fl.src, bom), " \t\r\n")
	if len(body) == 0 {
		fl.formats = []Format{FormatText}
		return
	}
	if exposition(body) {
		// A /metrics dump lists what a server exposes; it queries nothing.
		fl.formats = []Format{FormatExposition}
		return
	}
	var jsonErr, yamlErr error
	template := bytes.HasPrefix(body, []byte("{{")) || bytes.HasPrefix(body, []byte("{%")) || bytes.HasPrefix(body, []byte("{#"))
	if (body[0] == '{' || body[0] == '[') && !template {
		root, err := parseJSONIn(fl.src, fl.jsonArena())
		if err == nil && jsonFormat(root) == FormatJSON {
			// Not a dashboard: a Kubernetes manifest (kubectl get -o json), a LiteLLM or
			// router config, a rule file. JSON is YAML, and the checks by content are the
			// YAML ones, so the same content gets the same findings in either syntax.
			fl.walkYAMLDocs([]*yaml.Node{fl.yamlOf(root)})
			for i, f := range fl.formats {
				if f == FormatYAML {
					fl.formats[i] = FormatJSON
				}
			}
			fl.fix()
			fl.fixConfig()
			return
		}
		if err == nil {
			fl.formats = []Format{jsonFormat(root)}
			grafana := fl.formats[0] == FormatGrafana
			fl.walkJSON(root, make([]string, 0, 32), jsonCtx{grafana: grafana, widget: fl.formats[0] == FormatGCM, generic: fl.formats[0] == FormatJSON})
			fl.fix()
			return
		}
		if jsonLines(fl.src) {
			fl.formats = []Format{FormatText} // a trace or log: names only
			fl.textScan()
			fl.fix()
			return
		}
		jsonErr = err
	}
	if jsonErr == nil {
		docs, err := parseYAML(fl.src)
		if errors.Is(err, errTooManyDocs) {
			fl.refuseDocs()
			return
		}
		if ext := strings.ToLower(filepath.Ext(fl.path)); err != nil && (ext == ".yaml" || ext == ".yml") {
			yamlErr = err // named as YAML: say it did not parse (prose in a .txt may not)
		}
		if err == nil && structured(docs) {
			fl.walkYAMLDocs(docs)
			fl.fix()
			fl.fixConfig()
			return
		}
		if err != nil && helmTemplate(fl.src) {
			if fl.lintTemplate() {
				return
			}
			fl.formats = []Format{FormatHelmTemplate}
			fl.textScan()
			fl.addFile(finding.Info, CodeSkipped, StatusSkipped,
				"not valid YAML before rendering (a Helm template?): metric names were found by a text scan and queries were not parsed; lint the output of helm template for a full check")
			fl.fix()
			return
		}
	}
	fl.formats = []Format{FormatText}
	if f := fl.configText(); f != "" {
		fl.formats = []Format{f}
	}
	switch {
	case jsonErr != nil:
		fl.addFile(finding.Warning, CodeUnparsed, StatusUnparsed,
			fmt.Sprintf("looks like JSON but does not parse (%v): metric names were found by a text scan only", jsonErr))
	case yamlErr != nil:
		fl.addFile(finding.Warning, CodeUnparsed, StatusUnparsed,
			fmt.Sprintf("a .yaml file that does not parse (%v): metric names were found by a text scan only, and no query or configuration was checked", strings.TrimPrefix(yamlErr.Error(), "yaml: ")))
	}
	fl.textScan()
	fl.fix()
}

// exposition recognises Prometheus text exposition (a saved /metrics page): it starts with
// comment lines and has # TYPE or # HELP lines.
func exposition(body []byte) bool {
	head := body[:min(len(body), 4096)]
	return body[0] == '#' && (bytes.Contains(head, []byte("\n# TYPE ")) || bytes.Contains(head, []byte("\n# HELP ")) ||
		bytes.HasPrefix(head, []byte("# TYPE ")) || bytes.HasPrefix(head, []byte("# HELP ")))
}

// jsonLines recognises newline-delimited JSON (a trace, a log): its first line is a whole
// JSON value.
func jsonLines(src []byte) bool {
	first, _, ok := bytes.Cut(bytes.TrimLeft(src, " \t\r\n"), []byte("\n"))
	if !ok {
		return false
	}
	_, err := parseJSON(first)
	return err == nil
}

// helmKeyRE matches a YAML mapping line, the bulk of a Helm template.
var helmKeyRE = regexp.MustCompile(`(?m)^\s*(- )?[A-Za-z_][\w.-]*:(\s|$)`)

// helmTemplate recognises YAML with Go template actions: {{ ... }} and mapping lines, and no
// Jinja statements.
func helmTemplate(src []byte) bool {
	return bytes.Contains(src, []byte("{{")) && !bytes.Contains(src, []byte("{%")) &&
		helmKeyRE.Match(src)
}

// addFile records a finding about the whole file.
func (fl *fileLint) addFile(sev finding.Severity, code, status, msg string) {
	fl.findings = append(fl.findings, &Finding{Finding: finding.Finding{Severity: sev, Code: code, Message: msg, Subject: fl.path, File: fl.path, Line: 1, Column: 1}, Status: status})
}

func jsonFormat(root *jsonNode) Format {
	if root.kind != 'o' {
		return FormatJSON
	}
	for _, k := range []string{"mosaicLayout", "gridLayout", "rowLayout", "columnLayout"} {
		if root.get(k) != nil {
			return FormatGCM
		}
	}
	for _, k := range []string{"panels", "rows", "templating", "dashboard", "__inputs"} {
		if root.get(k) != nil {
			return FormatGrafana
		}
	}
	if m := root.get("model"); m != nil && m.get("targets") != nil {
		return FormatGrafana // an exported library panel
	}
	return FormatJSON
}

type jsonCtx struct {
	grafana  bool
	panel    string // title of the enclosing panel or widget
	variable string // name of the enclosing templating variable of type query
	inVar    bool   // inside a templating variable (of any type)
	widget   bool   // Cloud Monitoring: panels are widgets
	foreign  bool   // the datasource in force is not Prometheus: its expr is not PromQL
	generic  bool   // a JSON document of no known format: see yamlCtx.generic
}

// foreignDatasource recognises Loki, Elasticsearch and the like, in the object form
// ({"type": "loki"}) and the old name form ("Loki").
func foreignDatasource(ds *jsonNode) bool {
	var t string
	switch ds.kind {
	case 'o':
		t = ds.text("type")
		if t == "" || strings.HasPrefix(t, "$") || t == "datasource" || strings.Contains(t, "prometheus") {
			return false
		}
		return true
	case 's':
		t = strings.ToLower(ds.str)
		for _, f := range []string{"loki", "elastic", "influx", "tempo", "jaeger", "opensearch", "mysql", "postgres", "clickhouse"} {
			if strings.Contains(t, f) {
				return true
			}
		}
	}
	return false
}

func (fl *fileLint) walkJSON(n *jsonNode, path []string, c jsonCtx) {
	switch n.kind {
	case 'a':
		for i, k := range n.kids {
			if k.kind == 'o' || k.kind == 'a' {
				fl.walkJSON(k, append(path, strconv.Itoa(i)), c)
			} else {
				fl.genericJSONName(k, append(path, strconv.Itoa(i)), c)
			}
		}
		return
	case 'o':
	default:
		return
	}
	if n.get("targets") != nil || n.get("libraryPanel") != nil || (n.get("title") != nil && (n.get("xyChart") != nil || n.get("timeSeriesTable") != nil || n.get("scorecard") != nil)) {
		c.panel = n.text("title")
		if c.panel == "" {
			if lp := n.get("libraryPanel"); lp != nil {
				c.panel = lp.text("name")
			}
		}
	}
	if len(path) >= 3 && path[len(path)-3] == "templating" && path[len(path)-2] == "list" {
		c.inVar = true
		c.variable = ""
		if n.text("type") == "query" || n.text("type") == "" {
			c.variable = n.text("name")
		}
	}
	// A datasource on a panel applies to its targets unless they name their own.
	if ds := n.get("datasource"); ds != nil {
		c.foreign = foreignDatasource(ds)
	}
	skip := c.foreign
	for i, k := range n.keys {
		v := n.kids[i]
		p := append(path, k)
		switch {
		case v.kind == 's' && (k == "expr" || k == "prometheusQuery") && !skip:
			if strings.TrimSpace(v.str) == "" {
				continue
			}
			loc := fl.jsonLocation(c, n)
			s := fl.jsonSite(v, p, loc, c.grafana)
			fl.checkPromQL(s, v.str, 0, kindPromQL)
		case k == "overrides" && v.kind == 'a' && c.grafana && c.panel != "":
			fl.checkOverrides(v, p, c)
		case k == "query" && c.inVar:
			if c.variable == "" {
				continue // custom, interval, datasource variables: not queries
			}
			qs := v
			if v.kind == 'o' {
				qs = v.get("query")
				p = append(p, "query")
			}
			if qs == nil || qs.kind != 's' {
				continue
			}
			s := fl.jsonSite(qs, p, fmt.Sprintf("variable %q", c.variable), c.grafana)
			// Grafana keeps a copy of the query in definition; a rewrite updates both.
			if d := n.get("definition"); d != nil && d.kind == 's' && d.str == qs.str {
				s.mirror = d
			}
			fl.checkTemplate(s)
		default:
			if v.kind == 'o' || v.kind == 'a' {
				fl.walkJSON(v, p, c)
			} else {
				fl.genericJSONName(v, p, c)
			}
		}
	}
}

// checkOverrides checks the series names that a Grafana panel's field overrides match by
// name (byName, byNames, byRegexp). A display name such as {__name__="vllm:x", ...} names
// the metric: once the query is renamed the override matches nothing, and an override made
// by isolating a series in the legend ("hideSeriesFrom", mode exclude) then hides every
// series. Renaming the metric inside the display name keeps it matching.
func (fl *fileLint) checkOverrides(v *jsonNode, path []string, c jsonCtx) {
	for i, o := range v.kids {
		m := o.get("matcher")
		switch m.text("id") {
		case "byName", "byNames", "byRegexp":
		default:
			continue
		}
		loc := fmt.Sprintf("panel %q override %d", c.panel, i)
		mp := append(path[:len(path):len(path)], strconv.Itoa(i), "matcher", "options")
		opts := m.get("options")
		if opts == nil {
			continue
		}
		var strs []*jsonNode
		var paths [][]string
		if opts.kind == 's' {
			strs, paths = append(strs, opts), append(paths, mp)
		}
		if names := opts.get("names"); names != nil && names.kind == 'a' {
			for j, n := range names.kids {
				if n.kind == 's' {
					strs = append(strs, n)
					paths = append(paths, append(mp[:len(mp):len(mp)], "names", strconv.Itoa(j)))
				}
			}
		}
		for j, sv := range strs {
			s := fl.jsonSite(sv, paths[j], loc, true)
			qc := fl.newCheck(s, sv.str)
			seen := map[string]*Finding{}
			for _, at := range textNameRE.FindAllStringIndex(sv.str, -1) {
				if at[0] > 0 && isNameByte(sv.str[at[0]-1]) {
					continue
				}
				name := sv.str[at[0]:at[1]]
				if seen[name] != nil {
					continue
				}
				qc.res.queries++
				qc.checkName(name, at[0], false, false, [3]int{}, seen, false)
				if f := seen[name]; f != nil {
					f.Message += "; this override selects series by that name and stops matching when the query is renamed (one made by isolating a series in the legend then hides every series)"
				}
			}
			fl.apply(s, 0, qc.res)
		}
	}
}

// genericJSONName checks a string of a generic JSON document when it is one vLLM metric
// name.
func (fl *fileLint) genericJSONName(v *jsonNode, path []string, c jsonCtx) {
	if !c.generic || v.kind != 's' || !vllmNameRE.MatchString(strings.TrimSpace(v.str)) {
		return
	}
	fl.checkBareName(fl.jsonSite(v, path, "", false), v.str)
}

func (fl *fileLint) jsonLocation(c jsonCtx, n *jsonNode) string {
	var parts []string
	if c.panel != "" {
		parts = append(parts, fmt.Sprintf("panel %q", c.panel))
	}
	if r := n.text("refId"); r != "" {
		parts = append(parts, "query "+r)
	}
	if c.widget && len(parts) > 0 {
		parts[0] = "widget" + strings.TrimPrefix(parts[0], "panel")
	}
	if len(parts) == 0 {
		if name := n.text("name"); name != "" {
			return fmt.Sprintf("annotation %q", name)
		}
		return ""
	}
	return strings.Join(parts, " ")
}

func (fl *fileLint) jsonSite(v *jsonNode, path []string, loc string, grafana bool) *site {
	ptr := joinPointer(path)
	if e := fl.embed; e != nil {
		if loc == "" {
			loc = ptr
		}
		if e.loc != "" {
			loc = e.loc + ": " + loc
		}
		return &site{value: v.str, pointer: e.pointer, embedded: ptr, location: loc, grafana: grafana,
			yaml: e.node, yamlDoc: e.doc, srcStart: e.offset(e.node.Value, v.start)}
	}
	s := &site{value: v.str, pointer: ptr, location: loc, grafana: grafana, json: v, srcStart: v.start + 1}
	s.raw = v.end-v.start-2 == len(v.str) && string(fl.src[v.start+1:v.end-1]) == v.str
	if loc == "" {
		s.location = ptr
	}
	return s
}

// checkTemplate checks a Grafana variable query.
func (fl *fileLint) checkTemplate(s *site) {
	expr, off, regex, ok := templateQuery(s.value)
	if !ok {
		return
	}
	if regex != "" {
		qc := fl.newCheck(s, s.value)
		qc.res.queries++
		m, err := labelsRegex(regex)
		if err == nil {
			qc.checkRegex(m, strings.Index(s.value, regex), map[string]*Finding{})
		}
		fl.apply(s, 0, qc.res)
		return
	}
	res := fl.checkPromQL(s, expr, off, kindTemplate)
	label, at, ok := labelValuesLabel(s.value)
	if !ok || label != "model" || res.engineOnly == "" {
		return
	}
	for _, f := range res.findings {
		if f.f.Status == StatusLabelDrift || f.f.Status == StatusUnparsed {
			return // one label-drift finding per query; nothing to say about what did not parse
		}
	}
	// label_values(vllm:x, model) lists the values of a label vLLM's engine series do not
	// have: the variable is empty and every panel filtering on it shows nothing.
	qc := fl.newCheck(s, s.value)
	qc.add(at, "model", Finding{
		Finding: finding.Finding{Severity: finding.Warning, Code: CodeLabelDrift,
			Message: fmt.Sprintf("%s is labelled model_name by vLLM, not model: label_values lists nothing and the variable stays empty", res.engineOnly)},
		Metric: res.engineOnly, Status: StatusLabelDrift, Replacement: "model_name",
	})
	fl.apply(s, 0, qc.res)
}

// maxYAMLDocs bounds the documents read from one file.
const maxYAMLDocs = config.MaxYAMLDocs

// errTooManyDocs refuses a YAML stream past maxYAMLDocs. The whole file is refused: checking
// the first documents and dropping the rest would pass a removed metric in the one after.
var errTooManyDocs = config.ErrTooManyDocs

var parseYAML = config.ParseYAML

// refuseDocs is the finding on a file refused for errTooManyDocs.
func (fl *fileLint) refuseDocs() {
	fl.formats = []Format{FormatYAML}
	fl.addFile(finding.Error, CodeSkipped, StatusSkipped,
		fmt.Sprintf("refused: more than %d YAML documents in one file, kvcheck's limit, so nothing in it was checked; split the file", maxYAMLDocs))
}

// structured reports whether any document is a mapping or a sequence: prose parses as YAML
// too, as one long string.
func structured(docs []*yaml.Node) bool {
	for _, d := range docs {
		if len(d.Content) > 0 && (d.Content[0].Kind == yaml.MappingNode || d.Content[0].Kind == yaml.SequenceNode) {
			return true
		}
	}
	return false
}

// mapGet returns a mapping's value for key; for a key written twice, the last pair's, which
// Helm, PyYAML and the Kubernetes API server keep (internal/router/config/dupes.go).
var mapGet = config.MapGet

func mapText(n *yaml.Node, key string) string {
	if v := mapGet(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

type yamlCtx struct {
	doc      int
	multi    bool
	kind     string // the document's kind
	loc      string // the nearest named thing: a rule, a trigger, a metric entry
	parent   string // the key this node is the value of
	promKind bool   // inside a mapping whose kind names a Prometheus query plugin (Perses)
	// generic is set in a document of no known format (a chart's values, a config map):
	// there, a scalar that is a vllm: name and nothing else is checked as a bare name.
	generic bool
}

// vllmNameRE matches a scalar that is exactly one prefixed vLLM metric name, in any of its
// spellings but the adapter's vllm_ (too common a prefix for things that are not metrics).
var vllmNameRE = regexp.MustCompile(`^(?:prometheus\.googleapis\.com\|)?(?:ray_vllm_|vllm:|` + routerNamePrefix + `)[A-Za-z0-9_:]*[A-Za-z0-9_](?:\|[a-z]+)?$`)

// genericName checks a scalar of a generic document when it is one vLLM metric name.
func (fl *fileLint) genericName(v *yaml.Node, ptr string, c yamlCtx) bool {
	if !c.generic || v.Kind != yaml.ScalarNode || !vllmNameRE.MatchString(strings.TrimSpace(v.Value)) {
		return false
	}
	fl.checkBareName(fl.yamlSite(v, ptr, c), v.Value)
	return true
}

func (fl *fileLint) walkYAMLDocs(docs []*yaml.Node) {
	fl.formats = []Format{}
	for i, d := range docs {
		if len(d.Content) == 0 {
			continue
		}
		root := d.Content[0]
		kind := mapText(root, "kind")
		f := yamlFormat(root, kind)
		fl.formats = append(fl.formats, f)
		fl.walkYAML(root, "", yamlCtx{doc: i, multi: len(docs) > 1, kind: kind, generic: f == FormatYAML})
	}
	cf := fl.configDocs(docs)
	j := 0
	for i, d := range docs {
		if len(d.Content) == 0 {
			continue
		}
		if cf[i] != "" && j < len(fl.formats) && fl.formats[j] == FormatYAML {
			fl.formats[j] = Format(cf[i])
		}
		j++
	}
}

func yamlFormat(root *yaml.Node, kind string) Format {
	switch kind {
	case "PrometheusRule":
		return FormatRules
	case "ScaledObject", "ScaledJob":
		return FormatKEDA
	case "HorizontalPodAutoscaler":
		return FormatHPA
	case aibrix.PodAutoscalerKind:
		return FormatAIBrix
	case "Dashboard":
		return FormatPerses
	}
	if mapGet(root, "groups") != nil {
		return FormatRules
	}
	for _, k := range []string{"rules", "externalRules", "resourceRules"} {
		if r := mapGet(root, k); r != nil && (r.Kind == yaml.SequenceNode || mapGet(r, "custom") != nil) {
			return FormatAdapter
		}
	}
	return FormatYAML
}

func (fl *fileLint) walkYAML(n *yaml.Node, ptr string, c yamlCtx) {
	switch n.Kind {
	case yaml.SequenceNode:
		for i, k := range n.Content {
			cc := c
			switch c.parent {
			case "triggers":
				cc.loc = "trigger " + strconv.Itoa(i)
			case "metrics":
				if c.kind == "HorizontalPodAutoscaler" {
					cc.loc = "metric " + strconv.Itoa(i)
				}
			case "metricsSources":
				cc.loc = "metricsSources " + strconv.Itoa(i)
			case "rules", "custom", "externalRules":
				cc.loc = "rule " + strconv.Itoa(i)
			case "variables":
				cc.loc = "variable " + strconv.Itoa(i)
				if name := mapText(mapGet(k, "spec"), "name"); name != "" {
					cc.loc = fmt.Sprintf("variable %q", name)
				}
			}
			cc.parent = ""
			if fl.genericName(k, ptr+"/"+strconv.Itoa(i), cc) {
				continue
			}
			fl.walkYAML(k, ptr+"/"+strconv.Itoa(i), cc)
		}
		return
	case yaml.MappingNode:
	default:
		return
	}
	if a := mapText(n, "alert"); a != "" {
		c.loc = fmt.Sprintf("alert %q", a)
	} else if r := mapText(n, "record"); r != "" {
		c.loc = fmt.Sprintf("record %q", r)
		fl.records = append(fl.records, r)
	}
	if k := mapText(n, "kind"); strings.HasPrefix(k, "Prometheus") {
		c.promKind = true
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, v := n.Content[i].Value, n.Content[i+1]
		p := ptr + "/" + pointerToken(key)
		if v.Kind == yaml.ScalarNode && (strings.HasSuffix(key, ".json") || key == "json") &&
			strings.HasPrefix(strings.TrimSpace(v.Value), "{") && fl.embed == nil {
			fl.walkEmbedded(v, p, c)
			continue
		}
		if v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
			switch {
			case key == "expr" || key == "seriesQuery" ||
				(key == "query" && (c.promKind || c.kind == "ScaledObject" || c.kind == "ScaledJob")):
				if strings.TrimSpace(v.Value) != "" {
					st := fl.yamlSite(v, p, c)
					st.record = key == "expr" && mapText(n, "record") != ""
					fl.checkPromQL(st, v.Value, 0, kindPromQL)
				}
				continue
			case key == "metricsQuery":
				fl.checkPromQL(fl.yamlSite(v, p, c), v.Value, 0, kindAdapter)
				continue
			case key == "targetMetric",
				key == "name" && c.parent == "metric" && c.kind == "HorizontalPodAutoscaler",
				key == "metricName" && c.kind == "HorizontalPodAutoscaler":
				fl.checkBareName(fl.yamlSite(v, p, c), v.Value)
				continue
			}
		}
		if fl.genericName(v, p, c) {
			continue
		}
		if key == "matchers" && v.Kind == yaml.SequenceNode && c.promKind {
			for j, m := range v.Content {
				if m.Kind == yaml.ScalarNode {
					fl.checkPromQL(fl.yamlSite(m, p+"/"+strconv.Itoa(j), c), m.Value, 0, kindPromQL)
				}
			}
			continue
		}
		cc := c
		cc.parent = key
		if c.parent == "panels" && v.Kind == yaml.MappingNode {
			cc.loc = fmt.Sprintf("panel %q", key) // Perses panels are keyed by name
		}
		fl.walkYAML(v, p, cc)
	}
}

// walkEmbedded lints a JSON document held in a YAML scalar, such as a dashboard in a
// ConfigMap. Positions point into the YAML file; rewrites edit the scalar in place.
func (fl *fileLint) walkEmbedded(v *yaml.Node, ptr string, c yamlCtx) {
	root, err := parseJSONIn([]byte(v.Value), fl.jsonArena())
	loc := ptr
	if c.multi {
		loc = fmt.Sprintf("document %d: %s", c.doc+1, loc)
	}
	if err != nil {
		s := &site{value: v.Value, pointer: ptr, location: loc, yaml: v, yamlDoc: c.doc,
			srcStart: fl.lines.offset(v.Line, v.Column)}
		fl.add(s, 0, "", Finding{
			Finding: finding.Finding{Severity: finding.Warning, Code: CodeUnparsed,
				Message: fmt.Sprintf("embedded JSON does not parse (%v); it was not checked", err)},
			Status: StatusUnparsed,
		})
		return
	}
	e := &embedding{node: v, pointer: ptr, doc: c.doc, loc: loc, start: fl.lines.offset(v.Line, v.Column)}
	if v.Style == yaml.LiteralStyle {
		e.lineStarts = fl.literalLines(v)
	}
	fl.embed = e
	fl.walkJSON(root, make([]string, 0, 32), jsonCtx{grafana: jsonFormat(root) == FormatGrafana})
	fl.embed = nil
}

// literalLines returns the file offsets where each line of a literal block scalar's value
// begins, or nil when the source does not match the value line for line.
func (fl *fileLint) literalLines(v *yaml.Node) []int {
	lines := strings.Split(v.Value, "\n")
	var starts []int
	line := v.Line + 1 // the content starts on the line after the | indicator
	indent := -1
	for _, want := range lines {
		if line > len(fl.lines.starts()) {
			if want == "" {
				break
			}
			return nil
		}
		start := fl.lines.starts()[line-1]
		end := len(fl.src)
		if line < len(fl.lines.starts()) {
			end = fl.lines.starts()[line] - 1
		}
		text := strings.TrimSuffix(string(fl.src[start:end]), "\r")
		if want == "" {
			starts = append(starts, start)
			line++
			continue
		}
		if indent < 0 {
			indent = len(text) - len(strings.TrimLeft(text, " "))
		}
		if len(text) < indent || text[indent:] != want {
			return nil
		}
		starts = append(starts, start+indent)
		line++
	}
	return starts
}

func (fl *fileLint) yamlSite(v *yaml.Node, ptr string, c yamlCtx) *site {
	loc := c.loc
	if loc == "" {
		loc = ptr
	}
	if c.multi {
		loc = fmt.Sprintf("document %d: %s", c.doc+1, loc)
	}
	if j := fl.fromJSON[v]; j != nil {
		// A JSON string: rewritten in JSON's escaping, by offset, as in a dashboard.
		s := &site{value: v.Value, pointer: ptr, location: loc, json: j, srcStart: j.start + 1}
		s.raw = j.end-j.start-2 == len(j.str) && string(fl.src[j.start+1:j.end-1]) == j.str
		return s
	}
	s := &site{value: v.Value, pointer: ptr, location: loc, yaml: v, yamlDoc: c.doc,
		srcStart: fl.lines.offset(v.Line, v.Column)}
	end := s.srcStart + len(v.Value)
	s.raw = (v.Style == 0 || v.Style == yaml.FlowStyle) && end <= len(fl.src) && string(fl.src[s.srcStart:end]) == v.Value
	return s
}

// checkBareName checks a metric name written on its own (HPA metric.name, AIBrix
// targetMetric).
func (fl *fileLint) checkBareName(s *site, name string) {
	qc := fl.newCheck(s, s.value)
	qc.res.queries++
	if name = strings.TrimSpace(name); name != "" {
		qc.checkName(name, strings.Index(s.value, name), false, false, [3]int{}, map[string]*Finding{}, false)
	}
	fl.apply(s, 0, qc.res)
}

// textNameRE finds vLLM metric names in text that is not structured: prose, Markdown, Helm
// templates.
var textNameRE = regexp.MustCompile(`(?:prometheus\.googleapis\.com\|)?(?:(?:ray_)?vllm[:_]|` + routerNamePrefix + `)[A-Za-z0-9_:]*[A-Za-z0-9_](?:\|[a-z]+)?`)

// routerNamePrefix matches the name prefixes of the router layer's families (the llm-d
// picker and its KV-cache index, the GAIE picker): names found in text or as a whole YAML or
// JSON value are looked up like vLLM's; one the catalog does not know stays unreported unless
// its prefix is one only that family uses.
const routerNamePrefix = `llm_d_(?:router_)?epp_|llm_d_inference_scheduler_|kvcache_(?:index|kvevents)_|inference_(?:objective|pool|extension|model)_`

// textScan checks every vLLM-looking name in the file; no PromQL is parsed.
func (fl *fileLint) textScan() {
	for _, loc := range textNameRE.FindAllIndex(fl.src, -1) {
		if loc[0] > 0 && isNameByte(fl.src[loc[0]-1]) {
			continue // part of a longer identifier
		}
		name := string(fl.src[loc[0]:loc[1]])
		s := &site{value: name, srcStart: loc[0], raw: true}
		line, _ := fl.lines.pos(loc[0])
		s.location = "line " + strconv.Itoa(line)
		qc := fl.newCheck(s, name)
		qc.res.queries++
		qc.checkName(name, 0, false, false, [3]int{}, map[string]*Finding{}, false)
		fl.apply(s, 0, qc.res)
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
