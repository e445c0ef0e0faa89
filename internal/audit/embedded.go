package audit

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Chat templates carried inside configuration files: a production-stack values file holds the
// template itself under servingEngineSpec.modelSpec[].chatTemplateConfigMap, which the chart
// writes into a ConfigMap mounted at /templates and passes to vLLM as --chat-template
// /templates/<chatTemplate> (vllm-project/production-stack@a6c01db:
// helm/templates/deployment-vllm-multi.yaml:218-220 and 541-550); a Kubernetes ConfigMap
// holds one under a data key (chat_template.jinja); a container's args pass one inline
// (vLLM's --chat-template takes the template as well as a path); a Hugging Face
// chat_template.json holds one under "chat_template". kvcheck does not guess by key names,
// which every chart spells its own way: a string is a chat template when a Jinja tag in it
// reads the conversation (`messages`), which every chat template does and no other
// configuration string needs to.

// reChatTag finds a Jinja tag that reads the conversation: the mark of a chat template.
var reChatTag = regexp.MustCompile(`\{[{%][^}]*\bmessages\b`)

// maxConfigDocs bounds the YAML documents read from one file, as lint does.
const maxConfigDocs = 10000

// holdsChatTemplate reports whether a configuration file's text may carry a chat template: a
// cheap test on the bytes before any parse, so that a directory of dashboards and manifests
// costs one scan each.
func holdsChatTemplate(src string) bool {
	return reChatTag.MatchString(src)
}

// configTemplates reads the chat templates a YAML or JSON configuration carries in its
// strings. Each is named by its key path (servingEngineSpec.modelSpec[0].chatTemplateConfigMap)
// and placed at the file line its text starts on; a template written as a literal block
// (key: |) keeps its own lines there, one written any other way (quoted, folded, a JSON
// string) is placed on its key's line. It returns no template and no error for a file that
// carries none.
func configTemplates(path, src string) ([]namedTemplate, error) {
	if !holdsChatTemplate(src) {
		return nil, nil
	}
	d := yaml.NewDecoder(strings.NewReader(src))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := d.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("template %s: not readable as YAML or JSON: %w", path, err)
		}
		if len(docs) == maxConfigDocs {
			return nil, fmt.Errorf("template %s: more than %d YAML documents; audit the file that holds the chat template", path, maxConfigDocs)
		}
		docs = append(docs, &doc)
	}
	var out []namedTemplate
	for i, doc := range docs {
		where := ""
		if len(docs) > 1 {
			where = fmt.Sprintf("document %d ", i+1)
		}
		walkStrings(doc, where, 0, func(key string, n *yaml.Node) {
			if !reChatTag.MatchString(n.Value) {
				return
			}
			t := namedTemplate{name: strings.TrimSpace(key), src: n.Value, at: n.Line}
			if n.Style&yaml.LiteralStyle != 0 {
				// The block's text starts on the line after its indicator.
				t.at, t.exact = n.Line+1, true
			}
			out = append(out, t)
		})
	}
	return out, nil
}

// maxConfigDepth bounds the nesting walked: deeper than any configuration, shallow enough for
// the stack.
const maxConfigDepth = 1000

// walkStrings calls fn for every string scalar under n with its key path. Aliases are not
// followed: what they point to is walked where it is defined, once.
func walkStrings(n *yaml.Node, path string, depth int, fn func(string, *yaml.Node)) {
	if n == nil || depth > maxConfigDepth {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walkStrings(c, path, depth+1, fn)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			p := k
			if path != "" && !strings.HasSuffix(path, " ") {
				p = path + "." + k
			} else if path != "" {
				p = path + k
			}
			walkStrings(n.Content[i+1], p, depth+1, fn)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			walkStrings(c, path+"["+strconv.Itoa(i)+"]", depth+1, fn)
		}
	case yaml.ScalarNode:
		if n.Tag == "!!str" || n.Tag == "" {
			fn(path, n)
		}
	}
}
