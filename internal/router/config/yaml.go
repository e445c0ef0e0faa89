package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Pos is a 1-based line and column of the file.
type Pos struct{ Line, Col int }

// At is a YAML node's own position (a node of the file's documents; a Doc shifts the nodes of
// a document held in a scalar, Doc.Pos).
func At(n *yaml.Node) Pos { return Pos{n.Line, n.Column} }

// MaxYAMLDocs bounds the documents of one YAML stream.
const MaxYAMLDocs = 10000

// ErrTooManyDocs refuses a YAML stream past MaxYAMLDocs. The whole file is refused: checking
// the first documents and dropping the rest would pass a trap in the one after.
var ErrTooManyDocs = fmt.Errorf("more than %d YAML documents in one file", MaxYAMLDocs)

// ParseYAML reads every document of a YAML stream, refusing one of more than MaxYAMLDocs.
func ParseYAML(src []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if len(docs) == MaxYAMLDocs {
			return nil, ErrTooManyDocs
		}
		if err != nil {
			return docs, fmt.Errorf("yaml: %w", err)
		}
		docs = append(docs, &n)
	}
}

// MapGet returns a mapping's value for key; for a key written twice, the last pair's, which
// Helm, PyYAML and the Kubernetes API server keep (dupes.go).
func MapGet(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := len(n.Content)&^1 - 2; i >= 0; i -= 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// KeyNode returns a mapping's key node for k, for positions. A key written twice gives its
// last pair, the one Helm, PyYAML and the API server keep (dupes.go).
func KeyNode(m *yaml.Node, k string) *yaml.Node {
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

// Get follows a path of mapping keys, resolving aliases.
func Get(n *yaml.Node, path ...string) *yaml.Node {
	for _, k := range path {
		n = Deref(n)
		n = MapGet(n, k)
		if n == nil {
			return nil
		}
	}
	return Deref(n)
}

// Deref resolves an alias (and an alias of an alias, up to 16).
func Deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// Str returns a scalar's value at a path, and whether it is there (null is not).
func Str(n *yaml.Node, path ...string) (string, bool) {
	v := Get(n, path...)
	if v == nil || v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return "", false
	}
	return v.Value, true
}

// BoolAt returns a boolean at a path (quoted or not, any case; what is not a boolean is
// false), and whether it is set.
func BoolAt(n *yaml.Node, path ...string) (val, set bool) {
	s, ok := Str(n, path...)
	if !ok {
		return false, false
	}
	b, err := strconv.ParseBool(strings.ToLower(strings.Trim(s, `"'`)))
	return b && err == nil, true
}

// IntAt returns a whole number at a path, and whether it is there and one.
func IntAt(n *yaml.Node, path ...string) (int, bool) {
	s, ok := Str(n, path...)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	return v, err == nil
}

// Seq returns a sequence's items; nil for anything else.
func Seq(n *yaml.Node) []*yaml.Node {
	n = Deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

// maxAliasNodes bounds the nodes the config checks visit through YAML aliases in one file: a
// few nested aliases (a "billion laughs" document) would otherwise expand without end.
const maxAliasNodes = 100000

// aliasBomb reports whether expanding the documents' aliases visits more than maxAliasNodes
// nodes.
func aliasBomb(docs []*yaml.Node) bool {
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
	budget := maxAliasNodes
	var count func(n *yaml.Node, depth int) bool
	count = func(n *yaml.Node, depth int) bool {
		if n == nil {
			return false
		}
		budget--
		if budget < 0 || depth > 1000 {
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
