package config

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// The router and engine configuration formats lint recognises by content.
const (
	FormatLiteLLM     Format = "litellm-config"
	FormatEPC         Format = "llm-d-endpoint-picker-config"
	FormatLLMDValues  Format = "llm-d-router-values"
	FormatProdStack   Format = "production-stack-values"
	FormatDynamo      Format = "dynamo-graph-deployment"
	FormatCompose     Format = "docker-compose"
	FormatWorkload    Format = "kubernetes-workload"
	FormatPool        Format = "inference-pool"
	FormatObjective   Format = "inference-objective"
	FormatRayServe    Format = "ray-serve-llm-config"
	FormatShellScript Format = "shell-script"
)

// maxAliasNodes bounds the nodes the config checks visit through YAML aliases in one file: a
// few nested aliases (a "billion laughs" document) would otherwise expand without end.
const maxAliasNodes = 100000

// CodeYAMLBomb is the code of the error on a file whose YAML aliases expand past the bound.
const CodeYAMLBomb = "yaml-aliases"

// pos is a 1-based line and column in the file.
type pos struct{ line, col int }

// Facts is what one file contributes to the checks across files.
type Facts struct {
	engines     []*engine
	subscribers []*subscriber
	gateways    []*gatewayGroup
	routers     []kvRouter
	// proxies are LiteLLM configs that pin (for LL-04); proxyReplicas the replica counts of
	// LiteLLM proxy Deployments.
	proxies       []*litellmProxy
	proxyReplicas []int
	sglang        []*sglangGateway
}

// kvRouter is a KV- or prefix-aware router found in a file.
type kvRouter struct {
	file  string
	kind  string // llm-d, dynamo, production-stack, sglang
	names []string
	at    pos
	// events: the router reads the engines' KV events (so prefix caching off starves it).
	events bool
}

// ydoc is one YAML document being checked: a document of the file, or one held in a scalar
// (an EndpointPickerConfig in a ConfigMap or in Helm values).
type ydoc struct {
	fl  *File
	idx int // the file's document index; -1 for a document held in a scalar
	// line and col shift a held document's positions to the file's: a literal block's line
	// L, column C is the file's line line+L, column col+C-1.
	line, col int
	host      *yaml.Node // the scalar holding the document, for positions that cannot be shifted
	budget    *int       // alias nodes left
}

func (d *ydoc) pos(n *yaml.Node) pos {
	if n == nil {
		return pos{1, 1}
	}
	if d.idx >= 0 {
		return pos{n.Line, n.Column}
	}
	if d.line == 0 {
		return pos{d.host.Line, d.host.Column}
	}
	return pos{d.line + n.Line, d.col + n.Column - 1}
}

// key returns a mapping's key node for k, for positions.
// A key written twice gives its last pair, the one Helm, PyYAML and the API server keep
// (dupes.go).
func keyNode(m *yaml.Node, k string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := len(m.Content)&^1 - 2; i >= 0; i -= 2 {
		if m.Content[i].Value == k {
			return m.Content[i]
		}
	}
	return nil
}

// get follows a path of mapping keys, resolving aliases.
func get(n *yaml.Node, path ...string) *yaml.Node {
	for _, k := range path {
		n = deref(n)
		n = mapGet(n, k)
		if n == nil {
			return nil
		}
	}
	return deref(n)
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// str returns a scalar's value at a path, and whether it is there.
func str(n *yaml.Node, path ...string) (string, bool) {
	v := get(n, path...)
	if v == nil || v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return "", false
	}
	return v.Value, true
}

func boolAt(n *yaml.Node, path ...string) (val, set bool) {
	s, ok := str(n, path...)
	if !ok {
		return false, false
	}
	b, err := strconv.ParseBool(strings.ToLower(strings.Trim(s, `"'`)))
	return b && err == nil, true
}

func intAt(n *yaml.Node, path ...string) (int, bool) {
	s, ok := str(n, path...)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	return v, err == nil
}

func seq(n *yaml.Node) []*yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

// addConfig records a finding of a config rule at a position; hint names the key and the
// value that fix it.
func (fl *File) addConfig(code string, at pos, location, msg, hint string) *Finding {
	r, ok := ruleByCode[code]
	if !ok {
		panic("config: finding with no rule " + code) // a programming error: every code is in rules
	}
	f := &Finding{
		Finding: finding.Finding{Severity: r.Severity, Code: r.Code, Message: msg, Subject: fl.path, Fix: hint,
			File: fl.path, Line: max(at.line, 1), Column: max(at.col, 1), Rule: r.ID},
		Location: location,
		Status:   StatusConfig,
		Since:    r.Versions,
	}
	fl.findings = append(fl.findings, f)
	return f
}

// configDocs runs the config checks over a file's YAML documents and returns each document's
// config format, or "" where it is none.
func (fl *File) configDocs(docs []*yaml.Node) []Format {
	out := make([]Format, len(docs))
	budget := maxAliasNodes
	if aliasBomb(docs, &budget) {
		fl.addFile(finding.Error, CodeYAMLBomb, StatusSkipped,
			fmt.Sprintf("refused: the YAML aliases of this file expand to more than %d nodes (a YAML bomb?); expand the anchors or split the file", maxAliasNodes))
		return out
	}
	fl.epp = eppFlags{}
	for _, d := range docs {
		if len(d.Content) > 0 {
			if f := eppFlagsOf(d.Content[0]); f.visible && !fl.epp.visible {
				fl.epp = f
			}
		}
	}
	for i, d := range docs {
		if len(d.Content) == 0 {
			continue
		}
		doc := &ydoc{fl: fl, idx: i, budget: &budget}
		root := d.Content[0]
		if root.Kind != yaml.MappingNode {
			continue
		}
		out[i] = doc.check(root)
		if out[i] != FormatPool {
			doc.failOpenValues(root)
		}
		if out[i] != "" {
			doc.duplicateKeys(root, duplicateLoader(out[i], root))
		}
	}
	return out
}

// aliasBomb reports whether expanding the documents' aliases visits more nodes than budget.
func aliasBomb(docs []*yaml.Node, budget *int) bool {
	hasAlias := false
	var scan func(n *yaml.Node)
	scan = func(n *yaml.Node) {
		if hasAlias || n == nil {
			return
		}
		if n.Kind == yaml.AliasNode {
			hasAlias = true
			return
		}
		for _, c := range n.Content {
			scan(c)
		}
	}
	for _, d := range docs {
		scan(d)
	}
	if !hasAlias {
		return false
	}
	defer func() { *budget = maxAliasNodes }()
	var count func(n *yaml.Node, depth int) bool
	count = func(n *yaml.Node, depth int) bool {
		if n == nil {
			return false
		}
		*budget--
		if *budget < 0 || depth > 1000 {
			return true
		}
		if n.Kind == yaml.AliasNode {
			return count(n.Alias, depth+1)
		}
		for _, c := range n.Content {
			if count(c, depth+1) {
				return true
			}
		}
		return false
	}
	for _, d := range docs {
		if count(d, 0) {
			return true
		}
	}
	return false
}

// check detects one document's kind by content and runs its checks.
func (d *ydoc) check(root *yaml.Node) Format {
	kind, _ := str(root, "kind")
	api, _ := str(root, "apiVersion")
	var f Format
	switch {
	case kind == "EndpointPickerConfig":
		d.checkEPC(root, eppFlags{})
		f = FormatEPC
	case kind == "DynamoGraphDeployment":
		d.checkDynamo(root)
		f = FormatDynamo
	case kind == "InferencePool":
		d.checkPool(root)
		f = FormatPool
	case kind == "InferenceObjective":
		d.checkObjective(root, api)
		f = FormatObjective
	case get(root, "model_list") != nil || (get(root, "router_settings") != nil && get(root, "litellm_settings") != nil):
		d.checkLiteLLM(root, 0)
		f = FormatLiteLLM
	case get(root, "proxy_config", "model_list") != nil:
		// The litellm-helm chart's values: the config under proxy_config, the pods' count in
		// replicaCount.
		n, ok := intAt(root, "replicaCount")
		if !ok {
			n = 1
		}
		d.checkLiteLLM(get(root, "proxy_config"), n)
		f = FormatLiteLLM
	case get(root, "servingEngineSpec") != nil || get(root, "routerSpec", "routingLogic") != nil:
		d.checkProdStack(root)
		f = FormatProdStack
	case composeFile(root):
		d.checkCompose(root)
		f = FormatCompose
	}
	if f == "" && kind == "" && get(root, "deployment_config", "request_router_config") != nil {
		f = FormatRayServe
	}
	if f == "" {
		// Engines and routers inside any workload: Deployments, StatefulSets, LeaderWorkerSets,
		// Helm values with containers, ConfigMaps holding an EndpointPickerConfig.
		if d.workloads(root, kind) && f == "" {
			f = FormatWorkload
		}
		if d.embeddedEPCs(root) && f == "" {
			f = FormatLLMDValues
		}
	}
	if d.checkRay(root) && f == "" {
		f = FormatRayServe
	}
	return f
}

// embeddedEPCs checks every EndpointPickerConfig held in a string of the document (a ConfigMap's
// data, the router chart's pluginsCustomConfig) and reports whether there was one.
func (d *ydoc) embeddedEPCs(root *yaml.Node) bool {
	found := false
	flags := eppFlagsOf(root)
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || depth > 64 {
			return
		}
		switch n.Kind {
		case yaml.ScalarNode:
			for _, r := range heldEPCs(n) {
				held := &ydoc{fl: d.fl, idx: -1, host: n, budget: d.budget}
				if n.Style == yaml.LiteralStyle {
					held.line, held.col = n.Line, d.fl.blockIndent(n)
				}
				held.checkEPC(r, flags)
				held.duplicateKeys(r, loaderEPP)
				found = true
			}
		case yaml.MappingNode:
			for i := 1; i < len(n.Content); i += 2 {
				walk(n.Content[i], depth+1)
			}
		case yaml.SequenceNode, yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, depth+1)
			}
		}
	}
	walk(root, 0)
	return found
}

// heldEPCs returns the root of every EndpointPickerConfig document held in the scalar n (a
// ConfigMap's data, the router chart's pluginsCustomConfig), in order; a string that does not
// parse as YAML holds none.
func heldEPCs(n *yaml.Node) []*yaml.Node {
	if !strings.Contains(n.Value, "EndpointPickerConfig") || !strings.Contains(n.Value, "plugins") {
		return nil
	}
	docs, err := ParseYAML([]byte(n.Value))
	if err != nil {
		return nil
	}
	var out []*yaml.Node
	for _, sub := range docs {
		if len(sub.Content) == 0 {
			continue
		}
		if k, _ := str(sub.Content[0], "kind"); k == "EndpointPickerConfig" {
			out = append(out, sub.Content[0])
		}
	}
	return out
}

// blockIndent returns the 1-based column where a literal block scalar's content starts.
func (fl *File) blockIndent(n *yaml.Node) int {
	off := fl.lines.Offset(n.Line+1, 1)
	col := 1
	for off < len(fl.src) && (fl.src[off] == ' ' || fl.src[off] == '\t') {
		off++
		col++
	}
	return col
}

// configText checks a file that is not YAML: a shell script that starts an engine or a router,
// a Python Ray Serve application.
func (fl *File) configText() Format {
	src := fl.src
	if fl.orig != nil {
		src = fl.orig
	}
	var f Format
	cmds := shellCommands(src)
	for _, cmd := range cmds {
		e := engineFromArgv(fl.path, cmd.argv, cmd.at)
		if e == nil {
			continue
		}
		e.name = "script"
		fl.checkEngine(e)
		f = FormatShellScript
	}
	for _, cmd := range cmds {
		if g := sglangFrom(fl.path, cmd.argv); g != nil {
			fl.checkSGLang(g)
			if f == "" {
				f = FormatSGLang
			}
		}
	}
	for _, cmd := range cmds {
		if p := prodStackFrom(cmd.argv); p != nil {
			fl.checkProdStackCLI(p)
			if f == "" {
				f = FormatShellScript
			}
		}
	}
	if bytes.Contains(src, []byte("PrefixCacheAffinityRouter")) {
		fl.checkRayText(src)
		if f == "" {
			f = FormatRayServe
		}
	}
	return f
}

// facts returns the file's cross-file facts, creating them.
func (fl *File) facts() *Facts {
	if fl.config == nil {
		fl.config = &Facts{}
	}
	return fl.config
}
