package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Codes of a setting given twice on one command line, and of a key written twice in one JSON
// object a flag carries.
const (
	codeDuplicateFlag    = "cli/duplicate-flag"
	codeDuplicateJSONKey = "json/duplicate-key"
)

// A flag given twice on one command line is not refused by Python's argparse: a store action
// (every flag of vLLM's server and of production-stack's vllm_router but the few below) keeps the
// last value, silently (vLLM's FlexibleArgumentParser logs "Found duplicate keys" since it
// tracks them), and a BooleanOptionalAction pair (--enable-prefix-caching and
// --no-enable-prefix-caching) sets one option, so the last of either spelling wins. vLLM reads
// --foo_bar as --foo-bar and -tp, -dp, -pp as their long names. kvcheck reads the last, as
// they do, and reports the repetition.
//
// vllmAppendFlags are the vLLM server flags whose action is "append": each use adds a value,
// so repeating them is how they are used (--middleware, vllm/entrypoints/openai/cli_args.py;
// --capture-consumers and --capture-graphsafe-key, engine/arg_utils.py). vllm_router has none
// (src/vllm_router/parsers/parser.py: store and store_true only).
var vllmAppendFlags = map[string]bool{"--middleware": true, "--capture-consumers": true, "--capture-graphsafe-key": true}

// vllmShortFlags are vLLM's short spellings of long flags.
var vllmShortFlags = map[string]string{"-tp": "--tensor-parallel-size", "-dp": "--data-parallel-size", "-pp": "--pipeline-parallel-size"}

// FlagUse is one flag of a command line as the parser reads it: the option it sets (Dest, its
// long name without a --no- prefix), the word as written and its value.
type FlagUse struct {
	Dest      string
	Name, Val Token
	// HasVal: the flag carries a value (--name=value, or the word after it).
	HasVal bool
}

// VLLMDest is the option a vLLM flag sets: underscores read as dashes, a short name as its long
// one, --no-X as --X; "" for a word that is no long flag (a value such as -1) or a dotted
// --config.field, which vLLM merges into the JSON of its flag.
func VLLMDest(name string) string {
	if long, ok := vllmShortFlags[name]; ok {
		return long
	}
	if !strings.HasPrefix(name, "--") || len(name) < 3 || strings.Contains(name, ".") {
		return ""
	}
	d := "--" + strings.ReplaceAll(name[2:], "_", "-")
	if rest, ok := strings.CutPrefix(d, "--no-"); ok {
		d = "--" + rest
	}
	return d
}

// DuplicateFlags reports each option set more than once on one command line of program (the
// product's name in the message) at its last use, naming every use's line:column, the value
// the product keeps and the spellings when they differ; appendFlags are left out.
func (fl *File) DuplicateFlags(uses []FlagUse, program, loc string, appendFlags map[string]bool) {
	byDest := map[string][]FlagUse{}
	var order []string
	for _, u := range uses {
		if u.Dest == "" || appendFlags[u.Dest] {
			continue
		}
		if byDest[u.Dest] == nil {
			order = append(order, u.Dest)
		}
		byDest[u.Dest] = append(byDest[u.Dest], u)
	}
	for _, d := range order {
		us := byDest[d]
		// The uses with no template action between them and the last: a flag in each branch
		// of an {{ if }} is given once when the chart renders.
		first := len(us) - 1
		for first > 0 && !fl.TemplatedBetween(us[first-1].Name.At, us[len(us)-1].Name.At) {
			first--
		}
		us = us[first:]
		if len(us) < 2 {
			continue
		}
		at := make([]string, len(us))
		spelt := make([]string, len(us))
		same := true
		for i, u := range us {
			at[i] = fmt.Sprintf("%d:%d", u.Name.At.Line, u.Name.At.Col)
			spelt[i] = u.Name.Text
			if u.HasVal {
				spelt[i] += " " + strconv.Quote(u.Val.Text)
			}
			if u.Name.Text != us[0].Name.Text {
				same = false
			}
		}
		last := us[len(us)-1]
		kept := last.Name.Text
		if last.HasVal {
			kept += " " + strconv.Quote(last.Val.Text)
		}
		what := d + " is given " + times(len(us))
		if !same {
			what = fmt.Sprintf("%s sets one option, %s", strings.Join(uniq(spelt), ", "), d)
			what += ", " + times(len(us))
		}
		fl.Add(codeDuplicateFlag, last.Name.At, loc,
			fmt.Sprintf("%s on one %s command line (at %s, line:column): its argparse keeps the last, %s (%s), silently, and kvcheck reads that one",
				what, program, lineList(at), kept, at[len(at)-1]),
			fmt.Sprintf("give %s once, with the value you mean", d))
	}
}

// uniq keeps the first of each string, in order.
func uniq(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// maxJSONFlag bounds the JSON a flag's value is scanned for duplicate keys in.
const maxJSONFlag = 1 << 20

// duplicateJSONKeys reports each key written more than once in one object of a flag's JSON
// value (--kv-events-config '{"topic":"a",...,"topic":"b"}'): Python's json.loads and vLLM's
// pydantic validate_json keep the last, silently, as kvcheck does. A value that is not JSON is
// left to the rules that read it.
func (fl *File) duplicateJSONKeys(u FlagUse, program, loc string) {
	v := strings.TrimSpace(u.Val.Text)
	if !u.HasVal || !strings.HasPrefix(v, "{") || len(v) > maxJSONFlag || !json.Valid([]byte(v)) {
		return
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(v)))
	type object struct {
		path string
		keys map[string][]int64 // key -> offsets within the value, 1-based
		// order is the keys in the order first written.
		order []string
		// expectKey: the next string token is a key.
		expectKey bool
		pending   string
	}
	var stack []*object
	var arrays []bool // per open container: true for an array
	report := func(o *object) {
		for _, k := range o.order {
			offs := o.keys[k]
			if len(offs) < 2 {
				continue
			}
			at := make([]string, len(offs))
			for i, x := range offs {
				at[i] = strconv.FormatInt(x, 10)
			}
			path := join(o.path, k)
			fl.Add(codeDuplicateJSONKey, u.Val.At, loc,
				fmt.Sprintf("%s: key %s is written %s in one JSON object (at characters %s of the value): %s's JSON reader keeps the last (character %s), silently, and kvcheck reads that one",
					u.Name.Text, strconv.Quote(path), times(len(offs)), lineList(at), program, at[len(at)-1]),
				fmt.Sprintf("keep one %q in %s's JSON", k, u.Name.Text))
		}
	}
	for {
		off := dec.InputOffset()
		t, err := dec.Token()
		if err != nil {
			return
		}
		var top *object
		inObject := len(arrays) > 0 && !arrays[len(arrays)-1]
		if inObject {
			top = stack[len(stack)-1]
		}
		if inObject && top.expectKey {
			if k, ok := t.(string); ok {
				// The key's opening quote: skip a comma and blanks before it.
				start := off
				for start < int64(len(v)) && (v[start] == ',' || v[start] == ' ' || v[start] == '\t' || v[start] == '\n' || v[start] == '\r') {
					start++
				}
				if top.keys[k] == nil {
					top.order = append(top.order, k)
				}
				top.keys[k] = append(top.keys[k], start+1)
				top.expectKey, top.pending = false, k
				continue
			}
		}
		parent := ""
		if inObject {
			parent = join(top.path, top.pending)
			top.expectKey = true
		} else if len(stack) > 0 {
			parent = stack[len(stack)-1].path + "[]"
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, &object{path: parent, keys: map[string][]int64{}, expectKey: true})
			arrays = append(arrays, false)
		case json.Delim('['):
			stack = append(stack, &object{path: parent})
			arrays = append(arrays, true)
		case json.Delim('}'), json.Delim(']'):
			o := stack[len(stack)-1]
			if t == json.Delim('}') {
				report(o)
			}
			stack, arrays = stack[:len(stack)-1], arrays[:len(arrays)-1]
			if len(stack) == 0 {
				return
			}
			// The container closed was the value of its parent's key (or an element).
			if p := stack[len(stack)-1]; !arrays[len(arrays)-1] {
				p.expectKey = true
			}
			continue
		}
	}
}
