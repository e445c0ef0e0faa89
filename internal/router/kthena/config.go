package kthena

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/router/config"
)

// FormatConfigMap is lint's format name for the ConfigMap holding the router's configuration.
const FormatConfigMap config.Format = "kthena-router-config"

// ConfigMapName and ConfigKey are the ConfigMap the router mounts and the key that holds its
// configuration (volcano-sh/kthena@3cc0572: charts/kthena/charts/networking/templates/
// kthena-router/component/configmap.yaml; deployment.yaml:156-171 mounts the key as
// /etc/config/routerConfiguration.yaml).
const (
	ConfigMapName = "kthena-router-config"
	ConfigKey     = "routerConfiguration"
)

// Checker is the Kthena router's part in lint: it recognises the ConfigMap, checks its
// scheduler configuration (rules) and reads it back as the facts Configure reads.
type Checker struct{}

// ConfigRules implements config.Checker.
func (Checker) ConfigRules() []config.Rule { return rules }

// ConfigFormats implements config.Checker.
func (Checker) ConfigFormats() []config.Format { return []config.Format{FormatConfigMap} }

// routerConfig returns the router configuration a document holds, parsed, and the line of its
// key: a ConfigMap named kthena-router-config, or any ConfigMap whose data has the key
// routerConfiguration. nil when the document holds none, or the key's text is not a YAML
// mapping.
func routerConfig(root *yaml.Node) (*yaml.Node, int) {
	cfg, key := routerConfigNode(root)
	if cfg == nil {
		return nil, 0
	}
	return cfg, key.Line
}

// routerConfigNode is routerConfig with the scalar that holds the configuration.
func routerConfigNode(root *yaml.Node) (cfg, key *yaml.Node) {
	if kind, _ := config.Str(root, "kind"); kind != "ConfigMap" {
		return nil, nil
	}
	key = config.Get(root, "data", ConfigKey)
	if key == nil || key.Kind != yaml.ScalarNode {
		return nil, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(key.Value), &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil
	}
	return doc.Content[0], key
}

// CheckNested implements config.NestedChecker: a ConfigMap holding the router's configuration.
func (Checker) CheckNested(d *config.Doc, root *yaml.Node) (config.Format, config.Loader) {
	if d.Recognised() {
		return "", config.Loader{}
	}
	cfg, key := routerConfigNode(root)
	if cfg == nil {
		return "", config.Loader{}
	}
	checkConfig(d.Held(key), cfg)
	return FormatConfigMap, config.Loader{}
}

// ReadDocument implements config.DocumentReader: the scheduler's plugins and their arguments,
// as the facts Configure reads (FactScore, FactFilter, "<plugin>.<arg>"). The rest of the
// document is walked as usual.
func (Router) ReadDocument(v *config.Values, root *yaml.Node) (mine, walk bool) {
	cfg, line := routerConfig(root)
	if cfg == nil {
		return false, true
	}
	rf := v.NewRouter(ID, line)
	sched := config.Get(cfg, "scheduler")
	for _, pc := range config.Seq(config.Get(sched, "pluginConfig")) {
		name, _ := config.Str(pc, "name")
		args := config.Deref(config.Get(pc, "args"))
		if name == "" || args == nil || args.Kind != yaml.MappingNode {
			continue
		}
		for i := 1; i < len(args.Content); i += 2 {
			if args.Content[i].Kind == yaml.ScalarNode {
				rf.Values[name+"."+args.Content[i-1].Value] = args.Content[i].Value
			}
		}
	}
	if n := config.Get(sched, "plugins", "Filter", "enabled"); n != nil {
		var names []string
		for _, e := range config.Seq(n) {
			if s, ok := config.Str(e); ok {
				names = append(names, s)
			} else if s, ok := config.Str(e, "name"); ok {
				names = append(names, s)
			}
		}
		rf.Values[FactFilter] = strings.Join(names, ",")
	}
	if n := config.Get(sched, "plugins", "Score", "enabled"); n != nil {
		var items []string
		for _, e := range config.Seq(n) {
			name, _ := config.Str(e, "name")
			if name == "" {
				continue
			}
			item := name
			if w, ok := config.Str(e, "weight"); ok {
				item = fmt.Sprintf("%s:%s", name, w)
			}
			items = append(items, item)
		}
		rf.Values[FactScore] = strings.Join(items, ",")
	}
	v.Add(rf)
	return true, true
}
