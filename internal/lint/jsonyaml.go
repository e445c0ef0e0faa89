package lint

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlOf returns a parsed JSON document as the YAML document it also is (JSON is YAML's flow
// style), so that the checks written over YAML nodes (router and engine configs, autoscalers,
// rule files, Perses dashboards) see a manifest written by kubectl get -o json, or a LiteLLM
// config in JSON, as they see the same content in YAML. Positions are the JSON source's.
//
// fromJSON maps each string scalar to its JSON node, so that a rewrite of a query is written
// in JSON's escaping (encodeJSONString), never YAML's. The scalars' values are copies: what the
// config checks keep of them for the checks across files must not keep the file's text.
func (fl *fileLint) yamlOf(root *jsonNode) *yaml.Node {
	fl.fromJSON = map[*yaml.Node]*jsonNode{}
	return &yaml.Node{Kind: yaml.DocumentNode, Line: 1, Column: 1, Content: []*yaml.Node{fl.yamlNode(root)}}
}

func (fl *fileLint) yamlNode(n *jsonNode) *yaml.Node {
	line, col := fl.lines.pos(n.start)
	y := &yaml.Node{Line: line, Column: col}
	switch n.kind {
	case 'o':
		y.Kind, y.Tag, y.Style = yaml.MappingNode, "!!map", yaml.FlowStyle
		y.Content = make([]*yaml.Node, 0, 2*len(n.kids))
		for i, k := range n.keys {
			kl, kc := fl.lines.pos(n.keyAt[i])
			key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: strings.Clone(k), Line: kl, Column: kc}
			y.Content = append(y.Content, key, fl.yamlNode(n.kids[i]))
		}
	case 'a':
		y.Kind, y.Tag, y.Style = yaml.SequenceNode, "!!seq", yaml.FlowStyle
		y.Content = make([]*yaml.Node, 0, len(n.kids))
		for _, k := range n.kids {
			y.Content = append(y.Content, fl.yamlNode(k))
		}
	case 's':
		y.Kind, y.Tag, y.Style, y.Value = yaml.ScalarNode, "!!str", yaml.DoubleQuotedStyle, strings.Clone(n.str)
		fl.fromJSON[y] = n
	default:
		// true, false, null and numbers are written as they are: plain scalars whose text is
		// the value, which a config rewrite may replace in place (scalarSpan).
		y.Kind, y.Value = yaml.ScalarNode, strings.Clone(n.str)
		switch {
		case n.str == "true" || n.str == "false":
			y.Tag = "!!bool"
		case n.str == "null":
			y.Tag = "!!null"
		case strings.ContainsAny(n.str, ".eE"):
			y.Tag = "!!float"
		default:
			y.Tag = "!!int"
		}
	}
	return y
}
