package config

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// UnknownKeys reports the keys of a mapping that are not in known: a warning naming the nearest
// key when one is one or two edits away, info otherwise. system is the code prefix
// (system/unknown-key, system/key-typo: the product's rules); a typo is renamed by --fix.
func (d *Doc) UnknownKeys(m *yaml.Node, where string, known []string, system string) {
	if m == nil || m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if slices.Contains(known, k.Value) {
			continue
		}
		name := k.Value
		if where != "" {
			name = where + "." + k.Value
		}
		if best := NearestName(k.Value, known); best != "" {
			f := d.Add(system+"/key-typo", k, name,
				fmt.Sprintf("%s is not a key %s reads: did you mean %s?", name, system, best),
				fmt.Sprintf("rename %s to %s", k.Value, best))
			d.RenameFix(f, k, best)
			continue
		}
		d.Add(system+"/unknown-key", k, name,
			fmt.Sprintf("%s is not a key this kvcheck knows (a newer %s key?)", name, system), "")
	}
}

// Misspelt reports whether a mapping has a key one or two edits from key (and not key): its
// key-typo rewrite renames it, so a rewrite that adds key would write it twice.
func Misspelt(m *yaml.Node, key string) bool {
	if m == nil || m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i < len(m.Content); i += 2 {
		if k := m.Content[i].Value; k != key && NearestName(k, []string{key}) != "" {
			return true
		}
	}
	return false
}

// NearestName returns the name of known one or two edits from name, the first of the closest;
// "" when none is that close (two edits catch a dropped, doubled or swapped letter).
func NearestName(name string, known []string) string {
	best, dist := "", 3
	for _, c := range known {
		if x := editDistance(name, c, dist); x < dist {
			best, dist = c, x
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit when it is at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
