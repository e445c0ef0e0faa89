package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// routeLine is one line of --routes, as README documents it.
type routeLine struct {
	Policy       string `json:"policy"`
	Variant      string `json:"variant"`
	Label        string `json:"label"`
	Replicas     int    `json:"replicas"`
	KVBlocks     int    `json:"kv_blocks"`
	Request      int    `json:"request"`
	Sibling      int    `json:"sibling"`
	Replica      int    `json:"replica"`
	PromptTokens int    `json:"prompt_tokens"`
	CachedTokens int    `json:"cached_tokens"`
	Reason       string `json:"reason"`
}

// routeKeys are routeLine's keys: every line carries all of them and no other.
var routeKeys = []string{"policy", "variant", "label", "replicas", "kv_blocks", "request", "sibling", "replica", "prompt_tokens", "cached_tokens", "reason"}

// routeRun is what validateRoutes found of one replay's lines.
type routeRun struct {
	name    string
	lines   []routeLine
	reasons map[string]int
}

// validateRoutes reads --routes output and checks it as README promises: every line is a JSON
// object with exactly the documented keys; each replay's lines (policy, variant, label,
// replicas, kv_blocks) are together; within one, every request 0..requests-1 appears with its
// siblings 0..k-1 next to each other in order, each once; replicas are in range (one more with
// an added replica); cached tokens are 0 or more and at most the prompt's less one (the last
// token is always computed); every reason is named.
func validateRoutes(r io.Reader, requests int, added bool) ([]routeRun, error) {
	var runs []routeRun
	done := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &keys); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		var got []string
		for k := range keys {
			got = append(got, k)
		}
		if want := slices.Sorted(slices.Values(routeKeys)); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
			return nil, fmt.Errorf("line %d: keys %v, want %v", n, slices.Sorted(slices.Values(got)), want)
		}
		var l routeLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		name := fmt.Sprintf("%s/%s/%s@%dx%d", l.Policy, l.Variant, l.Label, l.Replicas, l.KVBlocks)
		if len(runs) == 0 || runs[len(runs)-1].name != name {
			if done[name] {
				return nil, fmt.Errorf("line %d: %s's lines are not together", n, name)
			}
			done[name] = true
			runs = append(runs, routeRun{name: name, reasons: map[string]int{}})
		}
		run := &runs[len(runs)-1]
		most := l.Replicas
		if added {
			most++
		}
		switch {
		case l.Policy == "":
			return nil, fmt.Errorf("line %d: no policy", n)
		case l.Request < 0 || l.Request >= requests:
			return nil, fmt.Errorf("line %d: request %d of %d", n, l.Request, requests)
		case l.Replica < 0 || l.Replica >= most:
			return nil, fmt.Errorf("line %d: replica %d of %d", n, l.Replica, most)
		case l.CachedTokens < 0 || l.CachedTokens > max(0, l.PromptTokens-1):
			return nil, fmt.Errorf("line %d: %d cached tokens of a %d-token prompt", n, l.CachedTokens, l.PromptTokens)
		case l.Reason == "":
			return nil, fmt.Errorf("line %d: no reason", n)
		}
		if k := len(run.lines); l.Sibling > 0 && (k == 0 || run.lines[k-1].Request != l.Request || run.lines[k-1].Sibling != l.Sibling-1) {
			return nil, fmt.Errorf("line %d: sibling %d of request %d does not follow sibling %d", n, l.Sibling, l.Request, l.Sibling-1)
		}
		run.lines = append(run.lines, l)
		run.reasons[l.Reason]++
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, run := range runs {
		first := map[int]int{}
		for _, l := range run.lines {
			if l.Sibling == 0 {
				if _, dup := first[l.Request]; dup {
					return nil, fmt.Errorf("%s: request %d appears twice", run.name, l.Request)
				}
				first[l.Request] = 1
			} else {
				first[l.Request]++
			}
		}
		if len(first) != requests {
			return nil, fmt.Errorf("%s: %d requests of %d routed", run.name, len(first), requests)
		}
	}
	return runs, nil
}

// routesCmd is the testscript command routes: it validates a --routes file (validateRoutes)
// and prints one line per replay with its routes, reasons and replicas, in the file's order:
//
//	routes [-added] FILE REQUESTS
//
// prints, for instance, "kv-longest//@2x64: 9 routes; reasons no-match-first 1, prefix-match 8;
// replicas 0 0 0 0 0 0 0 0 0".
func routesCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! routes")
	}
	added := len(args) > 0 && args[0] == "-added"
	if added {
		args = args[1:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: routes [-added] FILE REQUESTS")
	}
	requests, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("routes: %q is not a number of requests", args[1])
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	runs, err := validateRoutes(f, requests, added)
	if err != nil {
		ts.Fatalf("routes %s: %v", args[0], err)
	}
	w := ts.Stdout()
	for _, run := range runs {
		var reasons, replicas []string
		for _, r := range slices.Sorted(func(yield func(string) bool) {
			for k := range run.reasons {
				if !yield(k) {
					return
				}
			}
		}) {
			reasons = append(reasons, fmt.Sprintf("%s %d", r, run.reasons[r]))
		}
		lines := slices.Clone(run.lines)
		sort.SliceStable(lines, func(a, b int) bool { return lines[a].Request < lines[b].Request })
		for _, l := range lines {
			replicas = append(replicas, strconv.Itoa(l.Replica))
		}
		fmt.Fprintf(w, "%s: %d routes; reasons %s; replicas %s\n", run.name, len(run.lines), strings.Join(reasons, ", "), strings.Join(replicas, " "))
	}
}
