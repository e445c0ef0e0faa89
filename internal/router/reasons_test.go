package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// variedLog is a request log meant to take every branch of every router: conversations that
// go on (each turn repeats the ones before), on four system prompts of 300 to 6,000
// characters; session ids as a header (x-session-id, the one kvcheck tunes production-stack's
// session key to), in metadata, in the user field, or none; string contents, lists of text
// parts with images and empty parts, an assistant message with a null content and tool calls,
// cache_control markers (LiteLLM's prompt caching); completions whose prompts run to 12,000
// characters (past production-stack kvaware's threshold of 2,000 tokens) and repeat; empty
// prompts; bursts of long requests at one instant (a router's imbalance branch) between quiet
// stretches. Arrivals are a timestamp in seconds; max_tokens sets the outputs.
func variedLog(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x5ea5))
	words := strings.Fields("the order status ticket refund account plan region invoice tool search answer quote cite brief")
	text := func(chars int) string {
		var sb strings.Builder
		for sb.Len() < chars {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	systems := []string{text(300), text(1500), text(4500), text(6000)}
	type conv struct {
		system  int
		id, how string
		msgs    []any
	}
	var convs []*conv
	var completions []string
	var buf bytes.Buffer
	at := 0.0
	for i := range n {
		burst := i%40 >= 30 // ten requests at one instant, each long in flight
		if !burst {
			at += rng.Float64() * 2
		}
		body := map[string]any{"model": "m", "timestamp": at, "max_tokens": 1 + rng.IntN(30)}
		if burst {
			body["max_tokens"] = 400
		}
		switch x := rng.IntN(10); {
		case x < 6: // a chat: a new conversation or the next turn of one
			var c *conv
			if len(convs) == 0 || rng.IntN(3) == 0 {
				c = &conv{system: rng.IntN(len(systems)), id: fmt.Sprintf("s%d", len(convs)), how: []string{"header", "metadata", "user", "none"}[rng.IntN(4)]}
				c.msgs = []any{map[string]any{"role": "system", "content": systems[c.system]}}
				convs = append(convs, c)
			} else {
				c = convs[rng.IntN(len(convs))]
			}
			switch rng.IntN(4) {
			case 0:
				c.msgs = append(c.msgs, map[string]any{"role": "user", "content": []any{
					map[string]any{"type": "text", "text": text(80), "cache_control": map[string]any{"type": "ephemeral"}},
					map[string]any{"type": "image_url", "image_url": map[string]any{"url": fmt.Sprint("data:image/png;base64,", rng.Int())}},
					map[string]any{"type": "text", "text": ""},
				}})
			case 1:
				c.msgs = append(c.msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": fmt.Sprint("call-", i), "type": "function", "function": map[string]any{"name": "search", "arguments": "{}"}}}},
					map[string]any{"role": "tool", "tool_call_id": fmt.Sprint("call-", i), "content": text(60)})
			default:
				c.msgs = append(c.msgs, map[string]any{"role": "user", "content": text(40 + rng.IntN(400))})
			}
			body["messages"] = slices.Clone(c.msgs)
			c.msgs = append(c.msgs, map[string]any{"role": "assistant", "content": text(50)})
			switch c.how {
			case "header":
				body["headers"] = map[string]any{"x-session-id": c.id}
			case "metadata":
				body["metadata"] = map[string]any{"session_id": c.id}
			case "user":
				body["user"] = c.id
			}
		case x < 9: // a completion: new, a repeat, or an earlier one continued
			var p string
			switch {
			case len(completions) > 0 && rng.IntN(3) == 0:
				p = completions[rng.IntN(len(completions))]
			case len(completions) > 0 && rng.IntN(2) == 0:
				p = completions[rng.IntN(len(completions))] + text(200)
			default:
				p = systems[rng.IntN(len(systems))] + text([]int{20, 400, 12000}[rng.IntN(3)])
			}
			completions = append(completions, p)
			body["prompt"] = p
		default: // an empty prompt
			body["prompt"] = ""
		}
		line, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// TestEveryReasonIsDeclared replays every idealised policy, and every emulation in every
// default set its product ships, as kvcheck would tune it for the traffic and (for one that
// reads KV events) without the events, on a varied request log (variedLog) over fleets of 2 and
// 5 replicas with caches small enough to evict, with a replica added halfway and with every
// request sent twice (--n 2), and holds every route's reason to its policy's Reasons: never
// empty, always one of them (what simulate --help and README list). Each policy must run at
// least once; the reasons a policy declares but never gave here are logged, not failed: some
// branches need settings or load this log does not make.
func TestEveryReasonIsDeclared(t *testing.T) {
	tr, err := sim.ReadRequests(context.Background(), bytes.NewReader(variedLog(400, 1)), "varied.jsonl", sim.RequestLogOptions{BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Requests) != 400 {
		t.Fatalf("the log gave %d requests, want 400", len(tr.Requests))
	}
	type run struct {
		info sim.PolicyInfo
		how  string
	}
	var runs []run
	for _, p := range sim.Policies() {
		runs = append(runs, run{p, "idealised"})
	}
	configs := []sim.Config{fleet(2, 256, -1, 1), fleet(5, 160, tr.Requests[200].Arrival, 1), fleet(3, 200, -1, 2)}
	for _, p := range Products() {
		for _, v := range p.Shipped() {
			for _, e := range p.Emulations(v.Settings) {
				runs = append(runs, run{e, "shipped " + v.Key})
				tuned, _ := p.Tune(e.Name, v.Settings, product.TrafficOf(tr, 3, 200*16, false))
				runs = append(runs, run{pick(p.Emulations(tuned), e.Name), "tuned " + v.Key})
				if er, ok := p.(product.EventReader); ok {
					if without, _, ok := er.WithoutEvents(e.Name, v.Settings); ok {
						runs = append(runs, run{pick(p.Emulations(without), e.Name), "without events " + v.Key})
					}
				}
			}
		}
	}
	ran := map[string]bool{}
	seen := map[string]map[string]int{}
	for _, r := range runs {
		name := r.info.Name
		if len(r.info.Reasons) == 0 {
			t.Errorf("%s (%s) declares no reasons (sim.PolicyInfo.Reasons)", name, r.how)
			ran[name] = true
			continue
		}
		if seen[name] == nil {
			seen[name] = map[string]int{}
		}
		for _, c := range configs {
			_, routes, err := sim.SimulateRoutes(context.Background(), tr, c, r.info)
			var cannot *sim.CannotRunError
			if errors.As(err, &cannot) {
				continue
			}
			if err != nil {
				t.Fatalf("%s (%s): %v", name, r.how, err)
			}
			ran[name] = true
			bad := map[string]int{}
			for _, rt := range routes {
				if slices.Contains(r.info.Reasons, rt.Reason) {
					seen[name][rt.Reason]++
				} else {
					bad[rt.Reason]++
				}
			}
			for reason, k := range bad {
				t.Errorf("%s (%s), %d replicas, --n %d: %d routes with reason %q, not among its reasons %q", name, r.how, c.Replicas, c.Siblings, k, reason, r.info.Reasons)
			}
		}
	}
	for _, r := range runs {
		if !ran[r.info.Name] {
			t.Errorf("%s never ran on the log: each policy must be checked at least once", r.info.Name)
			ran[r.info.Name] = true // said once
		}
	}
	for _, r := range runs {
		if s := seen[r.info.Name]; s != nil {
			var never []string
			for _, reason := range r.info.Reasons {
				if s[reason] == 0 {
					never = append(never, reason)
				}
			}
			if len(never) > 0 {
				t.Logf("%s: declared but not given on this log: %s", r.info.Name, strings.Join(never, ", "))
			}
			delete(seen, r.info.Name)
		}
	}
}

// fleet is a small fleet in 16-token blocks: kv blocks a replica (a few prompts' worth, so that
// caches evict), prefill 1 ms a token, decode 20 ms a token, 4 requests running at once.
func fleet(replicas, kv int, addAt float64, n int) sim.Config {
	return sim.Config{Replicas: replicas, KVBlocks: kv, AddReplicaAt: addAt, Seed: 7, Siblings: n,
		Model: sim.Model{PrefillPerToken: 0.001, DecodePerToken: 0.02, MaxRunning: 4}, Params: sim.DefaultParams()}
}

// pick is the emulation named among es.
func pick(es []sim.PolicyInfo, name string) sim.PolicyInfo {
	for _, e := range es {
		if e.Name == name {
			return e
		}
	}
	panic("no emulation " + name)
}

// TestREADMEReasons keeps README's table of reasons (under "**Reasons.**") equal to the reasons
// the policies and emulations declare: a row for every reason, and no row for a reason none
// gives.
func TestREADMEReasons(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "**Reasons.**")
	if !ok {
		t.Fatal(`README.md has no "**Reasons.**" table`)
	}
	rows := map[string]bool{}
	inTable := false
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		if reason, ok := strings.CutPrefix(line, "| `"); ok {
			reason, _, _ = strings.Cut(reason, "`")
			rows[reason] = true
		}
	}
	declared := map[string]string{}
	for _, p := range sim.Policies() {
		for _, r := range p.Reasons {
			declared[r] = p.Name
		}
	}
	for _, name := range Names() {
		for _, r := range Reasons(name) {
			declared[r] = name
		}
	}
	for r, by := range declared {
		if !rows[r] {
			t.Errorf("README.md's reasons table has no row for %q (given by %s)", r, by)
		}
	}
	for r := range rows {
		if declared[r] == "" {
			t.Errorf("README.md's reasons table has a row for %q, which no policy gives", r)
		}
	}
	if len(rows) == 0 {
		t.Error("README.md's reasons table has no rows")
	}
}
