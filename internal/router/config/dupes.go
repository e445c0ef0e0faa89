package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// codeDuplicateKey is the code of a key written more than once in one mapping.
const codeDuplicateKey = "yaml/duplicate-key"

// A YAML mapping's keys must be unique (YAML 1.2 section 3.2.1.1), but yaml.v3's Node, as most
// loaders, keeps both pairs of a duplicated key, and the products disagree on what happens next:
//   - Helm (production-stack's and llm-d's chart values, litellm-helm's) and PyYAML (LiteLLM's
//     config.yaml, a Ray Serve config) keep the last pair, silently (helm/helm#4107);
//   - kubectl apply validates strictly since 1.27 (--validate=strict: "fail the request" on a
//     duplicate field); with --validate=warn or ignore the API server keeps the last;
//   - docker compose (yaml.v3) refuses the file: "mapping key ... already defined";
//   - the llm-d EPP decodes its EndpointPickerConfig strictly (serializer.EnableStrict, which
//     runs YAMLToJSONStrict to catch the duplicates plain conversion drops) and refuses it.
//
// kvcheck reads the last pair (MapGet, KeyNode), what the products that accept the file use, and
// reports every duplicate with the lines of all its pairs.

// What the tools that load configuration files do with a duplicate key (Loader.Text); a
// product names its own loader (the llm-d EPP's strict decoding) in its package.
const (
	loaderKubectl = "kubectl apply refuses the object (--validate=strict, its default since 1.27, fails on a duplicate field); with --validate=warn or ignore the API server keeps the last pair (%s)"
	loaderCompose = "docker compose refuses the file (mapping key already defined); a loader that accepts it keeps the last pair (%s)"
	loaderOther   = "most YAML loaders keep the last pair (%s); strict ones refuse the file"
)

// LoaderHelm is Helm's: a chart's values (production-stack's, llm-d's router chart,
// litellm-helm's).
var LoaderHelm = Loader{Text: "Helm keeps the last pair (%s), silently"}

// LoaderPyYAML is a Python program's that reads its config with PyYAML (LiteLLM's
// config.yaml, a Ray Serve config); program names it.
func LoaderPyYAML(program string) Loader {
	return Loader{Text: program + " loads it with PyYAML, which keeps the last pair (%s), silently"}
}

// loaderOf says what reads a config document of format f that its checks said ld loads: the
// product's own decoder, docker compose, kubectl for a Kubernetes object, the loader its
// checks named, Helm for a workload in chart values; as a format with one %s for the line
// kept.
func (d *Doc) loaderOf(root *yaml.Node, f Format, ld Loader) string {
	kind, _ := Str(root, "kind")
	api, _ := Str(root, "apiVersion")
	switch {
	case ld.Own:
		return ld.Text
	case f == FormatCompose:
		return loaderCompose
	case kind != "" && api != "":
		return loaderKubectl
	case ld.Text != "":
		return ld.Text
	case f == FormatWorkload:
		return LoaderHelm.Text
	}
	return loaderOther
}

// DuplicateKeys reports every key written more than once in one mapping of the document root,
// at the last pair (the one kvcheck reads), naming the lines of all of them; loader says what
// reads the document (Loader.Text). A Helm template's duplicates with an action between them
// are the branches of an if, not duplicates: left out.
func (d *Doc) DuplicateKeys(root *yaml.Node, loader string) {
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		if n == nil || depth > 256 {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			pairs := map[string][]*yaml.Node{}
			var order []string
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind != yaml.ScalarNode || k.Value == "<<" {
					continue // a merge key may repeat; a complex key is no setting
				}
				if pairs[k.Value] == nil {
					order = append(order, k.Value)
				}
				pairs[k.Value] = append(pairs[k.Value], k)
			}
			for _, k := range order {
				if ks := pairs[k]; len(ks) > 1 && !d.templated(ks) {
					d.reportDuplicate(join(path, k), ks, loader)
				}
			}
			for i := 1; i < len(n.Content); i += 2 {
				if k := n.Content[i-1].Value; k == "env" || k == "envs" {
					d.duplicateEnv(n.Content[i], join(path, k))
				}
				walk(n.Content[i], join(path, n.Content[i-1].Value), depth+1)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, path+"["+strconv.Itoa(i)+"]", depth+1)
			}
		}
	}
	walk(root, "", 0)
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func (d *Doc) reportDuplicate(path string, ks []*yaml.Node, loader string) {
	lines := make([]string, len(ks))
	for i, k := range ks {
		lines[i] = strconv.Itoa(d.Pos(k).Line)
	}
	last := "line " + lines[len(lines)-1]
	d.fl.Add(codeDuplicateKey, d.Pos(ks[len(ks)-1]), path,
		fmt.Sprintf("%s is written %s in one mapping (lines %s): %s, and kvcheck reads that one",
			path, times(len(ks)), lineList(lines), fmt.Sprintf(loader, last)),
		fmt.Sprintf("keep one %s: delete the others, or move their values into the one you mean", ks[0].Value))
}

// templated reports whether a masked Helm action lies between the first and the last of the
// keys: {{ if }} ... {{ else }} branches each writing the key are not duplicates once rendered.
func (d *Doc) templated(ks []*yaml.Node) bool {
	return d.fl.TemplatedBetween(d.Pos(ks[0]), d.Pos(ks[len(ks)-1]))
}

// codeDuplicateEnv is the code of an environment variable set twice in one env list.
const codeDuplicateEnv = "kubernetes/duplicate-env"

// duplicateEnv reports a variable a Kubernetes env list (a container's env, a Dynamo
// component's envs) sets more than once: the kubelet gives the container the last definition,
// the API server warns that it "hides previous definition of ..., which may be dropped when using
// apply" (kubectl apply merges the list by name), and kvcheck reads the last. A later definition
// that reads the earlier one ($(NAME), as PATH=$(PATH):/x) is how a value is extended, and the
// API server does not warn about it: neither does kvcheck.
func (d *Doc) duplicateEnv(list *yaml.Node, path string) {
	if list == nil || list.Kind != yaml.SequenceNode {
		return
	}
	names := map[string][]*yaml.Node{}
	var order []string
	for _, it := range list.Content {
		if it.Kind != yaml.MappingNode {
			continue
		}
		kn, vn := KeyNode(it, "name"), MapGet(it, "name")
		if kn == nil || vn == nil || vn.Kind != yaml.ScalarNode || vn.Value == "" || d.fl.TemplateValue(vn.Value) {
			continue
		}
		if v, _ := Str(it, "value"); len(names[vn.Value]) > 0 && Get(it, "valueFrom") == nil && strings.Contains(v, "$("+vn.Value+")") {
			continue
		}
		if names[vn.Value] == nil {
			order = append(order, vn.Value)
		}
		names[vn.Value] = append(names[vn.Value], kn)
	}
	for _, name := range order {
		ks := names[name]
		if len(ks) < 2 || d.templated(ks) {
			continue
		}
		lines := make([]string, len(ks))
		for i, k := range ks {
			lines[i] = strconv.Itoa(d.Pos(k).Line)
		}
		d.fl.Add(codeDuplicateEnv, d.Pos(ks[len(ks)-1]), path+" "+name,
			fmt.Sprintf("%s is set %s in %s (lines %s): the container gets the last (line %s), the API server warns that it hides the earlier definition, which kubectl apply's merge by name may drop; kvcheck reads the last",
				name, times(len(ks)), path, lineList(lines), lines[len(lines)-1]),
			fmt.Sprintf("set %s once, to the value you mean", name))
	}
}

// times says how often: twice, 3 times.
func times(n int) string {
	if n == 2 {
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}

// lineList joins line numbers as a sentence does: 5 and 7; 5, 7 and 8.
func lineList(lines []string) string {
	return strings.Join(lines[:len(lines)-1], ", ") + " and " + lines[len(lines)-1]
}
