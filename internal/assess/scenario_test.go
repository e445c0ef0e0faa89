package assess

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// The scenario suite: situations generated here (seeded), run through Assess, the code path
// kvcheck assess runs, each with the verdict and "then" worked out from first principles. The
// numbers behind each "why" use the estimate the request reader uses (4 bytes a token, 16-token
// blocks) and the replay's fleet: 4 replicas unless the case says otherwise, one request a
// second, light load. Gains are points of all prompt tokens after the warm-up (the first half
// of the requests), judged against 5 points.

// words is the vocabulary of generated text: 50 words of 4 to 8 letters, so a 16-token block
// (64 bytes, about 10 words) repeats by chance with probability about 50^-10.
var words = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike
november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basil cedar
dune ember fjord grove harbor island jasper kettle lantern meadow nickel orchid pepper quartz river
saddle timber umber velvet willow`)

// text returns about n estimated tokens (4n bytes) of words drawn from rng.
func text(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < 4*n {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()
}

type msg = map[string]string

func chat(msgs ...msg) map[string]any { return map[string]any{"model": "m", "messages": msgs} }

// log holds generated request bodies; each line is written in arrival order.
type reqLog struct {
	name  string
	lines []map[string]any
}

func (l *reqLog) add(body map[string]any) { l.lines = append(l.lines, body) }

func (l *reqLog) source(t *testing.T) *RequestLog {
	t.Helper()
	var buf bytes.Buffer
	for _, b := range l.lines {
		line, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	data := buf.Bytes()
	return &RequestLog{Name: l.name, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
}

// conversations builds n multi-turn chats of `turns` turns over a short shared system prompt
// (64 tokens): each turn adds a 150-token question and, before the next, a 150-token answer,
// and repeats the whole conversation so far. Conversations start a few seconds apart and
// interleave. With ids, each request carries metadata.session_id; prefix, when set, is put at
// the top of the system prompt per request (a breaker); user, when given, is put there per
// conversation (the same user's line on every turn of one conversation).
func conversations(seed uint64, n, turns int, ids bool, prefix func(rng *rand.Rand, i int) string, user ...func(c int) string) *reqLog {
	rng := rand.New(rand.NewPCG(seed, 1))
	sys := "You are a helpful support assistant. " + text(rng, 56)
	type ev struct {
		at   float64
		body map[string]any
	}
	var evs []ev
	for c := range n {
		at := float64(c) * 3
		var conv []msg
		for k := range turns {
			conv = append(conv, msg{"role": "user", "content": text(rng, 150)})
			s := sys
			if prefix != nil {
				s = prefix(rng, len(evs)) + sys
			}
			if len(user) > 0 {
				s = user[0](c) + s
			}
			body := chat(append([]msg{{"role": "system", "content": s}}, conv...)...)
			if ids {
				body["metadata"] = map[string]any{"session_id": fmt.Sprintf("conv-%d", c)}
			}
			evs = append(evs, ev{at, body})
			conv = append(conv, msg{"role": "assistant", "content": text(rng, 150)})
			at += 20 + float64(k)
		}
	}
	slices.SortStableFunc(evs, func(a, b ev) int { return int(a.at*1000) - int(b.at*1000) })
	l := &reqLog{name: "chat.jsonl"}
	for _, e := range evs {
		e.body["timestamp"] = 1_700_000_000 + e.at
		l.add(e.body)
	}
	return l
}

// tenants builds n single-turn requests over `count` system prompts of `size` tokens each
// (tenants or RAG documents), chosen uniformly, each followed by a unique 40-token question,
// one a second. lead, when set, starts each system prompt; user sets OpenAI's user field.
func tenants(seed uint64, n, count, size int, lead func(rng *rand.Rand, i int) string, user func(i int) string) *reqLog {
	rng := rand.New(rand.NewPCG(seed, 2))
	prompts := make([]string, count)
	for i := range prompts {
		prompts[i] = fmt.Sprintf("Tenant %d. ", i) + text(rng, size)
	}
	l := &reqLog{name: "tenants.jsonl"}
	for i := range n {
		s := prompts[rng.IntN(count)]
		if lead != nil {
			s = lead(rng, i) + s
		}
		body := chat(msg{"role": "system", "content": s}, msg{"role": "user", "content": text(rng, 40)})
		if user != nil {
			body["user"] = user(i)
		}
		l.add(body)
	}
	return l
}

// rep is one replica's counters in a generated /metrics dump.
type rep struct {
	name                 string
	queries, hits        float64
	caching              bool
	preemptions, success float64
	numGPUBlocks         int
	noPrefix             bool
}

// dump writes the replicas' /metrics as vLLM 0.25 exposes them and returns its path.
func dump(t *testing.T, reps ...rep) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# TYPE vllm:cache_config_info gauge\n")
	for _, r := range reps {
		on := "True"
		if !r.caching {
			on = "False"
		}
		fmt.Fprintf(&b, "vllm:cache_config_info{block_size=\"16\",enable_prefix_caching=%q,instance=%q,num_gpu_blocks=\"%d\"} 1\n", on, r.name, r.numGPUBlocks)
	}
	b.WriteString("# TYPE vllm:prefix_cache_queries_total counter\n")
	for _, r := range reps {
		if !r.noPrefix {
			fmt.Fprintf(&b, "vllm:prefix_cache_queries_total{engine=\"0\",instance=%q,model_name=\"m\"} %g\n", r.name, r.queries)
		}
	}
	b.WriteString("# TYPE vllm:prefix_cache_hits_total counter\n")
	for _, r := range reps {
		if !r.noPrefix {
			fmt.Fprintf(&b, "vllm:prefix_cache_hits_total{engine=\"0\",instance=%q,model_name=\"m\"} %g\n", r.name, r.hits)
		}
	}
	b.WriteString("# TYPE vllm:num_preemptions_total counter\n")
	for _, r := range reps {
		fmt.Fprintf(&b, "vllm:num_preemptions_total{engine=\"0\",instance=%q,model_name=\"m\"} %g\n", r.name, r.preemptions)
	}
	b.WriteString("# TYPE vllm:request_success_total counter\n")
	for _, r := range reps {
		fmt.Fprintf(&b, "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",instance=%q,model_name=\"m\"} %g\n", r.name, r.success)
	}
	p := filepath.Join(t.TempDir(), "metrics.prom")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// metrics reads dumps as kvcheck assess --file does.
func metrics(t *testing.T, paths ...string) *promql.Report {
	t.Helper()
	in, err := promql.FromDumps(context.Background(), paths, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := promql.Analyze(in)
	return &rep
}

// healthyReps returns n replicas with caching on, 60% hits, no pressure, 65536 blocks of 16
// (1 Mi tokens).
func healthyReps(n int) []rep {
	var out []rep
	for i := range n {
		out = append(out, rep{name: fmt.Sprintf("10.0.0.%d:8000", i+1), queries: 1e6, hits: 6e5, caching: true, preemptions: 0, success: 4000, numGPUBlocks: 65536})
	}
	return out
}

func isoTime(_ *rand.Rand, i int) string {
	return fmt.Sprintf("Current time: 2026-11-30T10:%02d:%02d.%06dZ\n", (i/60)%60, i%60, i*7919%1000000)
}

func requestID(rng *rand.Rand, _ int) string {
	return fmt.Sprintf("Request %08x-%04x-%04x-%04x-%012x\n", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff)
}

var customers = strings.Fields("Avery Blake Casey Dana Emery Finley Gray Harper Indigo Jordan Kai Lane Morgan Noel Oakley Parker Quinn Reese Sage Tatum")

var surnames = strings.Fields("Abbott Brooks Castro Diaz Ellis Foster")

// customer names one of 120 customers (20 first names x 6 surnames): most of the 160
// requests come from a customer seen once or twice.
func customer(_ *rand.Rand, i int) string {
	k := (i * 37) % 120
	return "Customer: " + customers[k%20] + " " + surnames[k/20] + "\n"
}

// conversationUser names conversation c's customer (40 conversations, 40 customers).
func conversationUser(c int) string { return customer(nil, c*3) }

// mooncake turns a request log's conversations into a trace of block keys without sessions,
// as a Mooncake trace without session ids arrives.
func withoutSessions(t *sim.Trace) *sim.Trace {
	out := &sim.Trace{Name: "conversations.jsonl", Format: "mooncake", BlockSize: t.BlockSize, PrefixInfo: true}
	for _, r := range t.Requests {
		r.Session = ""
		out.Requests = append(out.Requests, r)
	}
	return out
}

// agentFanOut builds an agent's tasks: each a unique 2,000-token context (the task, its
// documents, its tool results so far), sent with n=4 (four samples at once, as a client
// splitting parallel sampling does), two tasks a second (about 20 in flight: decode runs 256
// tokens), no session ids.
func agentFanOut(seed uint64, tasks int) *reqLog {
	rng := rand.New(rand.NewPCG(seed, 3))
	l := &reqLog{name: "agent.jsonl"}
	for i := range tasks {
		body := chat(msg{"role": "user", "content": fmt.Sprintf("Task %d context: ", i) + text(rng, 2000)})
		body["n"] = 4
		body["max_tokens"] = 256
		body["timestamp"] = 1_700_000_000 + float64(i)/2
		l.add(body)
	}
	return l
}

// agentFanOutShared is agentFanOut with a 500-token system prompt every task shares.
func agentFanOutShared(seed uint64, tasks int) *reqLog {
	rng := rand.New(rand.NewPCG(seed, 3))
	sys := "You are a research agent. " + text(rng, 500)
	l := &reqLog{name: "agent.jsonl"}
	for i := range tasks {
		body := chat(msg{"role": "system", "content": sys}, msg{"role": "user", "content": fmt.Sprintf("Task %d context: ", i) + text(rng, 2000)})
		body["n"] = 4
		body["max_tokens"] = 256
		body["timestamp"] = 1_700_000_000 + float64(i)/2
		l.add(body)
	}
	return l
}

// userFirst builds single-turn requests that open with the user's own text: no system prompt.
func userFirst(seed uint64, n int) *reqLog {
	rng := rand.New(rand.NewPCG(seed, 4))
	l := &reqLog{name: "questions.jsonl"}
	for i := range n {
		l.add(chat(msg{"role": "user", "content": fmt.Sprintf("%d. ", 1000+i) + text(rng, 300)}))
	}
	return l
}

func TestScenarios(t *testing.T) {
	th := advise.DefaultThresholds()
	type scenario struct {
		name string
		why  string
		in   func(t *testing.T) Inputs
		opts Options
		want advise.Verdict
		then advise.Verdict
		// rules must each appear among the reasons (for or against the verdict), and mention
		// in their texts; advice in the advice.
		rules   []string
		mention []string
		advice  []string
		// first lists the routers (emulations) that may be ranked first, any variant; notFirst
		// those that may not. unnamed: a router verdict no replayed router of its kind pays
		// for, so none is named (reason router-unnamed). Every scenario also holds the rule's
		// invariants (checkRanking).
		first, notFirst []string
		unnamed         bool
		// noFirst: the ranking must name no router first (NoWinner), whatever its order.
		noFirst bool
		// fixes are rule ids among the recommendation's fixes, evidence texts among its
		// figures; snippet and notSnippet are texts the first's configuration to apply (its
		// text and where it goes) must and must not hold.
		fixes, evidence     []string
		snippet, notSnippet []string
		// seeds holds, for a router judged over seeds, what its spread must show.
		seeds map[string]func(*rank.SeedSpread) bool
	}
	four := Options{Replicas: 4, KVTokens: 1 << 20}
	reqs := func(l *reqLog) func(t *testing.T) Inputs {
		return func(t *testing.T) Inputs { return Inputs{Requests: l.source(t)} }
	}
	scenarios := []scenario{
		{
			name: "one replica: two dumps of it, a request log, --replicas 1",
			why:  "a fleet of one has nothing to route between, whatever the traffic",
			in: func(t *testing.T) Inputs {
				r := healthyReps(1)
				p1 := dump(t, r...)
				r[0].queries, r[0].hits, r[0].success = 2e6, 1.2e6, 8000
				return Inputs{Metrics: metrics(t, p1, dump(t, r...)), Requests: tenants(1, 120, 40, 1000, nil, nil).source(t)}
			},
			opts:  Options{Replicas: 1},
			want:  advise.Nothing,
			rules: []string{"single-replica"},
		},
		{
			name: "unique traffic",
			why:  "no block repeats, so every option hits 0 and saves 0 points",
			in: func(t *testing.T) Inputs {
				rng := rand.New(rand.NewPCG(5, 5))
				l := &reqLog{name: "unique.jsonl"}
				for range 120 {
					l.add(map[string]any{"model": "m", "prompt": text(rng, 500)})
				}
				return Inputs{Requests: l.source(t)}
			},
			opts: four, want: advise.Nothing, rules: []string{"no-option-pays"},
		},
		{
			name: "multi-turn chat with session ids",
			why:  "turn k repeats turns 1..k-1 (about (k-1)/k of its prompt); round-robin keeps a turn on its conversation's replica 1 time in 4, session affinity always, so it saves tens of points; a KV router saves the same (the conversation prefix is the only reuse) and no more: the cheaper option. The routers: LiteLLM's session_affinity keys on metadata.session_id, which these requests carry (its requirement met), and keeps each conversation on one replica; production-stack's session router keys on a header, and these requests have none, so it cannot run; the prefix routers save as much but are not session routers, and the verdict is session affinity: LiteLLM's is first",
			in:   reqs(conversations(2, 40, 4, true, nil)),
			opts: four, want: advise.SessionAffinity, rules: []string{"session-affinity-saves"},
			mention: []string{"holds as long as the traffic keeps its shape, however long it runs: new shared prefixes keep arriving"},
			first:   []string{"litellm-session-affinity"}, notFirst: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware", "llmd-approx", "llmd-precise"},
		},
		{
			name: "multi-turn chat without session ids: sessions from conversation continuity",
			why:  "each turn's messages extend the previous turn's, so the sessions are known without ids; as with ids, session affinity captures the reuse. No router can key on these sessions: the requests carry no id (the conversations are told apart by their messages), LiteLLM's session_affinity finds none (its requirement missing, it saves nothing) and production-stack's session router has no header to read: none is named, and the answer says to send an id per conversation",
			in:   reqs(conversations(3, 40, 4, false, nil)),
			opts: four, want: advise.SessionAffinity, rules: []string{"session-affinity-saves"},
			unnamed: true,
		},
		{
			name: "one 2,000-token system prompt shared by every user, plenty of KV (issue 9, failure 1)",
			why:  "every replica caches the one prompt after its first request; after the warm-up round-robin hits it as often as any router: the 3 extra cold misses of 2,000 tokens are warm-up",
			in: func(t *testing.T) Inputs {
				return Inputs{Requests: tenants(6, 160, 1, 2000, nil, func(i int) string { return fmt.Sprintf("user-%d", i%25) }).source(t)}
			},
			opts: four, want: advise.Nothing, rules: []string{"no-option-pays"},
		},
		{
			name: "40 tenants' 1,000-token prompts that do not fit in one replica",
			why:  "40k tokens of prompts against 16k of KV per replica: round-robin cycles all 40 through each LRU and hits about a third; a KV router gives each replica about 10 (10k tokens, which fit) and hits almost all: tens of points; no sessions to measure. The routers: every prefix router that keeps a tenant's (or document's) prompt on one replica reaches the same hits after the warm-up, so they tie on whole points; Ray's, SGLang's and production-stack's prefix routers need one requirement (their own component, unknown without --config), llm-d's two or three, so the smaller change puts one of the first three first; the balance routers save nothing and LiteLLM's have nothing to pin on (no session ids, no cache_control)",
			in:   reqs(tenants(7, 400, 40, 1000, nil, nil)),
			opts: Options{Replicas: 4, KVTokens: 16 << 10}, want: advise.KVAwareRouter, rules: []string{"kv-router-saves", "working-set-exceeds-replica"},
			mention: []string{"holds as long as the traffic keeps its shape, however long it runs: the working set is"},
			first:   []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware"}, notFirst: []string{"dynamo-round-robin", "prodstack-roundrobin", "litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching", "llmd-approx", "llmd-precise"},
		},
		{
			name: "the same 40 tenants' prompts with plenty of KV: the gain is warm-up",
			why:  "40 prompts of about 1,000 tokens (about 40,000 shared tokens) fit in 1 Mi tokens; 400 requests, each prompt is drawn in the first 200 with probability 1-(39/40)^200 > 99%, so no shared prefix arrives after the warm-up; round-robin computes each prompt once per replica, 3 x 40,000 = 120,000 extra tokens once; at about 1,050 prompt tokens/s (400 requests of 1,048 tokens over 399 s) that is under 5 points of all prefill after 120,000 / (1,050 x 0.05) = about 2,290 s (38 min): the measured gain (round-robin still misses prompts it has not met on a replica after 200 s) is warm-up, nothing",
			in:   reqs(tenants(7, 400, 40, 1000, nil, nil)),
			opts: four, want: advise.Nothing, rules: []string{"warm-up-amortises"},
			mention: []string{"in any run longer than 38 min: the difference holds only for runs shorter than that"},
		},
		{
			name: "RAG documents repeated across users",
			why:  "30 documents of 1,200 tokens (36k) against 12k of KV per replica: the same argument as the tenants' prompts; each document is read by many users, so only placement by content shares it. The routers: every prefix router that keeps a tenant's (or document's) prompt on one replica reaches the same hits after the warm-up, so they tie on whole points; Ray's, SGLang's and production-stack's prefix routers need one requirement (their own component, unknown without --config), llm-d's two or three, so the smaller change puts one of the first three first; the balance routers save nothing and LiteLLM's have nothing to pin on (no session ids, no cache_control)",
			in:   reqs(tenants(8, 400, 30, 1200, nil, nil)),
			opts: Options{Replicas: 4, KVTokens: 12 << 10}, want: advise.KVAwareRouter, rules: []string{"kv-router-saves"},
			first: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware"}, notFirst: []string{"dynamo-round-robin", "prodstack-roundrobin", "litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching", "llmd-approx", "llmd-precise"},
		},
		{
			name: "the tenants' prompts with a per-request timestamp at the top (issue 9, failure 3)",
			why:  "the time in block 0 makes every prompt unique (nothing hits under any router); replaced by a constant, the traffic is the 40-tenant case, where a KV router pays: fix first, then a KV-aware router. The routers: every prefix router that keeps a tenant's (or document's) prompt on one replica reaches the same hits after the warm-up, so they tie on whole points; Ray's, SGLang's and production-stack's prefix routers need one requirement (their own component, unknown without --config), llm-d's two or three, so the smaller change puts one of the first three first; the balance routers save nothing and LiteLLM's have nothing to pin on (no session ids, no cache_control); ranked on the traffic once fixed, which then is about",
			in:   reqs(tenants(7, 400, 40, 1000, isoTime, nil)),
			opts: Options{Replicas: 4, KVTokens: 16 << 10}, want: advise.FixFirst, then: advise.KVAwareRouter, rules: []string{"breaker-costs", "kv-router-saves"},
			first: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware"}, notFirst: []string{"dynamo-round-robin", "prodstack-roundrobin", "litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching", "llmd-approx", "llmd-precise"},
		},
		{
			name: "multi-turn chat with a request id in block 0",
			why:  "a new id every request breaks even a conversation's own prefix; once constant, the chat case: fix first, then session affinity. The routers: LiteLLM's session_affinity keys on metadata.session_id, which these requests carry (its requirement met), and keeps each conversation on one replica; production-stack's session router keys on a header, and these requests have none, so it cannot run; the prefix routers save as much but are not session routers, and the verdict is session affinity: LiteLLM's is first",
			in:   reqs(conversations(2, 40, 4, true, requestID)),
			opts: four, want: advise.FixFirst, then: advise.SessionAffinity, rules: []string{"breaker-costs", "session-affinity-saves"},
			first: []string{"litellm-session-affinity"}, notFirst: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware", "llmd-approx", "llmd-precise"},
		},
		{
			name: "RAG documents behind a per-request id in block 0",
			why:  "a new id before every document makes every prompt unique; once constant it is the RAG case, where a KV router pays: fix first, then a KV-aware router. The routers: every prefix router that keeps a tenant's (or document's) prompt on one replica reaches the same hits after the warm-up, so they tie on whole points; Ray's, SGLang's and production-stack's prefix routers need one requirement (their own component, unknown without --config), llm-d's two or three, so the smaller change puts one of the first three first; the balance routers save nothing and LiteLLM's have nothing to pin on (no session ids, no cache_control)",
			in:   reqs(tenants(8, 400, 30, 1200, requestID, nil)),
			opts: Options{Replicas: 4, KVTokens: 12 << 10}, want: advise.FixFirst, then: advise.KVAwareRouter, rules: []string{"breaker-costs", "kv-router-saves"},
			first: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware"}, notFirst: []string{"dynamo-round-robin", "prodstack-roundrobin", "litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching", "llmd-approx", "llmd-precise"},
		},
		{
			name: "multi-turn chat without session ids, a timestamp at the top of the system prompt",
			why:  "the stamp changes every turn, but a turn's messages after the system prompt still extend the previous turn's, so the sessions are known; the stamp breaks even a conversation's own prefix; once constant it is the chat case: fix first, then session affinity. No router can key on these sessions: the requests carry no id (the conversations are told apart by their messages), LiteLLM's session_affinity finds none (its requirement missing, it saves nothing) and production-stack's session router has no header to read: none is named, and the answer says to send an id per conversation",
			in:   reqs(conversations(3, 40, 4, false, isoTime)),
			opts: four, want: advise.FixFirst, then: advise.SessionAffinity, rules: []string{"breaker-costs", "session-affinity-saves"},
			unnamed: true,
		},
		{
			name: "one shared prompt behind a per-user line in block 0",
			why:  "one of 120 customers' names before the shared 2,000 tokens, 160 requests: a prompt is cached only where its customer went before, and most customers come once or twice, so round-robin hits little; once constant it is the one shared prompt that fits everywhere (round-robin hits it): the breaker costs tens of points, fix first, then nothing",
			in:   reqs(tenants(9, 160, 1, 2000, customer, nil)),
			opts: four, want: advise.FixFirst, then: advise.Nothing, rules: []string{"breaker-costs", "no-option-pays"},
		},
		// The rest of the breaker combinations: each base situation with a timestamp, a request
		// id and a per-user value in block 0. A per-request value makes every prompt unique, so
		// the breaker costs what the fixed traffic hits (tens of points): fix first, then the
		// base case's verdict. A per-user value in a conversation is the same on every turn of
		// it: it costs only the 64-token system prompt shared across conversations (under 5
		// points of prompts that grow to 1,000 tokens), so it is no fix-first and the chat's
		// answer stands.
		{
			name: "multi-turn chat with session ids, a timestamp at the top of the system prompt",
			why:  "the stamp changes every turn and breaks each conversation's own prefix; once constant, the chat case: fix first, then session affinity. The routers: LiteLLM's session_affinity keys on metadata.session_id, which these requests carry (its requirement met), and keeps each conversation on one replica; production-stack's session router keys on a header, and these requests have none, so it cannot run; the prefix routers save as much but are not session routers, and the verdict is session affinity: LiteLLM's is first",
			in:   reqs(conversations(2, 40, 4, true, isoTime)),
			opts: four, want: advise.FixFirst, then: advise.SessionAffinity, rules: []string{"breaker-costs", "session-affinity-saves"},
			first: []string{"litellm-session-affinity"}, notFirst: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware", "llmd-approx", "llmd-precise"},
		},
		{
			name: "multi-turn chat without session ids, a request id in block 0",
			why:  "a new id every turn; the sessions are still known from continuity (the messages after the system prompt extend the previous turn's); once constant, the chat case: fix first, then session affinity. No router can key on these sessions: the requests carry no id (the conversations are told apart by their messages), LiteLLM's session_affinity finds none (its requirement missing, it saves nothing) and production-stack's session router has no header to read: none is named, and the answer says to send an id per conversation",
			in:   reqs(conversations(3, 40, 4, false, requestID)),
			opts: four, want: advise.FixFirst, then: advise.SessionAffinity, rules: []string{"breaker-costs", "session-affinity-saves"},
			unnamed: true,
		},
		{
			name: "multi-turn chat with session ids, the customer's name in block 0",
			why:  "the name is the same on every turn of a conversation, so its own prefix (the reuse session affinity captures) is intact; the breaker only stops 40 conversations sharing the 64-token system prompt: under 5 points, so no fix-first, and the answer is the chat's, session affinity. The routers: LiteLLM's session_affinity keys on metadata.session_id, which these requests carry (its requirement met), and keeps each conversation on one replica; production-stack's session router keys on a header, and these requests have none, so it cannot run; the prefix routers save as much but are not session routers, and the verdict is session affinity: LiteLLM's is first",
			in:   reqs(conversations(2, 40, 4, true, nil, conversationUser)),
			opts: four, want: advise.SessionAffinity, rules: []string{"session-affinity-saves", "breaker-cheap"},
			first: []string{"litellm-session-affinity"}, notFirst: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware", "llmd-approx", "llmd-precise"},
		},
		{
			name: "multi-turn chat without session ids, the customer's name in block 0",
			why:  "as with ids: each conversation's turns still extend each other (so the sessions are known) and the name costs only the shared system prompt: session affinity. No router can key on these sessions: the requests carry no id (the conversations are told apart by their messages), LiteLLM's session_affinity finds none (its requirement missing, it saves nothing) and production-stack's session router has no header to read: none is named, and the answer says to send an id per conversation",
			in:   reqs(conversations(3, 40, 4, false, nil, conversationUser)),
			opts: four, want: advise.SessionAffinity, rules: []string{"session-affinity-saves", "breaker-cheap"},
			unnamed: true,
		},
		{
			name: "one shared prompt behind a per-request timestamp",
			why:  "every prompt unique, nothing hits; once constant, the one 2,000-token prompt that fits everywhere, which round-robin hits on about 95% of prompt tokens: the breaker costs that much: fix first, then nothing",
			in:   reqs(tenants(6, 160, 1, 2000, isoTime, nil)),
			opts: four, want: advise.FixFirst, then: advise.Nothing, rules: []string{"breaker-costs", "no-option-pays"},
		},
		{
			name: "one shared prompt behind a per-request id",
			why:  "as with the timestamp: fix first, then nothing",
			in:   reqs(tenants(6, 160, 1, 2000, requestID, nil)),
			opts: four, want: advise.FixFirst, then: advise.Nothing, rules: []string{"breaker-costs", "no-option-pays"},
		},
		{
			name: "40 tenants' prompts behind a per-request id, 16k of KV",
			why:  "every prompt unique; once constant, the 40-tenant case that does not fit in one replica: fix first, then a KV-aware router. The routers: every prefix router that keeps a tenant's (or document's) prompt on one replica reaches the same hits after the warm-up, so they tie on whole points; Ray's, SGLang's and production-stack's prefix routers need one requirement (their own component, unknown without --config), llm-d's two or three, so the smaller change puts one of the first three first; the balance routers save nothing and LiteLLM's have nothing to pin on (no session ids, no cache_control)",
			in:   reqs(tenants(7, 400, 40, 1000, requestID, nil)),
			opts: Options{Replicas: 4, KVTokens: 16 << 10}, want: advise.FixFirst, then: advise.KVAwareRouter, rules: []string{"breaker-costs", "kv-router-saves"},
			first: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware"}, notFirst: []string{"dynamo-round-robin", "prodstack-roundrobin", "litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching", "llmd-approx", "llmd-precise"},
		},
		{
			name: "40 tenants' prompts behind the customer's name, 16k of KV",
			why:  "120 customers x 40 tenants over 400 requests: a (customer, tenant) pair almost never repeats, so almost nothing hits; once constant, the 40-tenant case: fix first, then a KV-aware router. The routers: every prefix router that keeps a tenant's (or document's) prompt on one replica reaches the same hits after the warm-up, so they tie on whole points; Ray's, SGLang's and production-stack's prefix routers need one requirement (their own component, unknown without --config), llm-d's two or three, so the smaller change puts one of the first three first; the balance routers save nothing and LiteLLM's have nothing to pin on (no session ids, no cache_control)",
			in:   reqs(tenants(7, 400, 40, 1000, customer, nil)),
			opts: Options{Replicas: 4, KVTokens: 16 << 10}, want: advise.FixFirst, then: advise.KVAwareRouter, rules: []string{"breaker-costs", "kv-router-saves"},
			first: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware"}, notFirst: []string{"dynamo-round-robin", "prodstack-roundrobin", "litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching", "llmd-approx", "llmd-precise"},
		},
		{
			name: "RAG documents behind a per-request timestamp",
			why:  "every prompt unique; once constant, the RAG case: fix first, then a KV-aware router. The routers: every prefix router that keeps a tenant's (or document's) prompt on one replica reaches the same hits after the warm-up, so they tie on whole points; Ray's, SGLang's and production-stack's prefix routers need one requirement (their own component, unknown without --config), llm-d's two or three, so the smaller change puts one of the first three first; the balance routers save nothing and LiteLLM's have nothing to pin on (no session ids, no cache_control)",
			in:   reqs(tenants(8, 400, 30, 1200, isoTime, nil)),
			opts: Options{Replicas: 4, KVTokens: 12 << 10}, want: advise.FixFirst, then: advise.KVAwareRouter, rules: []string{"breaker-costs", "kv-router-saves"},
			first: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware"}, notFirst: []string{"dynamo-round-robin", "prodstack-roundrobin", "litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching", "llmd-approx", "llmd-precise"},
		},
		{
			name: "RAG documents behind the customer's name",
			why:  "120 customers x 30 documents over 400 requests: pairs rarely repeat; once constant, the RAG case: fix first, then a KV-aware router. The routers: every prefix router that keeps a tenant's (or document's) prompt on one replica reaches the same hits after the warm-up, so they tie on whole points; Ray's, SGLang's and production-stack's prefix routers need one requirement (their own component, unknown without --config), llm-d's two or three, so the smaller change puts one of the first three first; the balance routers save nothing and LiteLLM's have nothing to pin on (no session ids, no cache_control) (issue 22, failure 3: fix first, then a KV-aware router, none named, the routers ranked on the broken traffic where none saves anything)",
			in:   reqs(tenants(8, 400, 30, 1200, customer, nil)),
			opts: Options{Replicas: 4, KVTokens: 12 << 10}, want: advise.FixFirst, then: advise.KVAwareRouter, rules: []string{"breaker-costs", "kv-router-saves"},
			first: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware"}, notFirst: []string{"dynamo-round-robin", "prodstack-roundrobin", "litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching", "llmd-approx", "llmd-precise"},
		},
		{
			name: "prefix caching off on one replica",
			why:  "a replica that caches nothing gains nothing from any router; once on, the chat traffic's answer is session affinity. The routers: LiteLLM's session_affinity keys on metadata.session_id, which these requests carry (its requirement met), and keeps each conversation on one replica; production-stack's session router keys on a header, and these requests have none, so it cannot run; the prefix routers save as much but are not session routers, and the verdict is session affinity: LiteLLM's is first",
			in: func(t *testing.T) Inputs {
				r := healthyReps(4)
				r[2].caching = false
				return Inputs{Metrics: metrics(t, dump(t, r...)), Requests: conversations(2, 40, 4, true, nil).source(t)}
			},
			want: advise.FixFirst, then: advise.SessionAffinity, rules: []string{"prefix-caching-off", "session-affinity-saves"},
			first: []string{"litellm-session-affinity"}, notFirst: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware", "llmd-approx", "llmd-precise"},
		},
		{
			name: "a thrashing fleet",
			why:  "100 preemptions per 1k requests: the hit rate may be re-prefill and capacity comes first; the traffic (one shared prompt that fits) then needs nothing",
			in: func(t *testing.T) Inputs {
				r := healthyReps(4)
				for i := range r {
					r[i].preemptions = 400
				}
				return Inputs{Metrics: metrics(t, dump(t, r...)), Requests: tenants(6, 160, 1, 2000, nil, nil).source(t)}
			},
			want: advise.FixFirst, then: advise.Nothing, rules: []string{"fleet-thrashes", "no-option-pays"},
		},
		{
			name: "a partial Prometheus answer showing one replica, no traffic",
			why:  "a partial answer may have left replicas out, so one replica is no fleet size; and a 40% hit rate cannot say whether misses are unique traffic or misrouted prefixes: cannot tell yet",
			in: func(t *testing.T) Inputs {
				r := healthyReps(1)
				r[0].hits = 4e5
				m := metrics(t, dump(t, r...))
				m.Source = promql.Source("prometheus")
				m.Findings = append(m.Findings, finding.Finding{Severity: finding.Warning, Code: "server-warning", Message: "partial response: store 2 of 3 did not answer"})
				return Inputs{Metrics: m}
			},
			want: advise.Undetermined, rules: []string{"metrics-cannot-tell"},
		},
		{
			name: "a lengths-only trace (issue 9, failure 8)",
			why:  "lengths carry no prefix content: reuse cannot be shown either way",
			in: func(t *testing.T) Inputs {
				tr := &sim.Trace{Name: "azure.csv", Format: "azure", BlockSize: 16}
				for i := range 200 {
					tr.Requests = append(tr.Requests, sim.Request{Arrival: float64(i), Blocks: []uint64{uint64(2 * i), uint64(2*i + 1)}, InputTokens: 32, OutputTokens: 10, N: 1})
				}
				return Inputs{Trace: tr}
			},
			opts: four, want: advise.Undetermined, rules: []string{"lengths-only"},
		},
		{
			name: "a trace of conversations without session ids (issue 9, failure 9)",
			why:  "the within-conversation reuse is real and a KV router finds it by content; session affinity cannot be measured without ids (a session policy would hash block 0, one key for all), so it is not recommended from it. The routers: LiteLLM's session_affinity still reads metadata.session_id from the bodies and saves as much, but the verdict is a KV-aware router (the sessions are not measured), so the first is a prefix router, each of which keeps conversations together by their shared start",
			in: func(t *testing.T) Inputs {
				tr, err := sim.ReadRequests(context.Background(), strings.NewReader(linesOf(t, conversations(2, 40, 4, true, nil))), "chat.jsonl", sim.RequestLogOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return Inputs{Trace: withoutSessions(tr)}
			},
			opts: four, want: advise.KVAwareRouter, rules: []string{"kv-router-saves"}, mention: []string{"session affinity was not measured"},
			first: []string{"prodstack-prefixaware", "ray-prefix-affinity", "sglang-cache-aware", "llmd-approx"}, notFirst: []string{"litellm-session-affinity"},
		},
		{
			name: "metrics only, one replica cold (issue 9, failure 7)",
			why:  "three replicas at 60%, one at 5%: the numbers cannot say whether the cold one gets unique traffic or misrouted prefixes: cannot tell yet, naming the cold replica",
			in: func(t *testing.T) Inputs {
				r := healthyReps(4)
				r[3].hits = 5e4
				return Inputs{Metrics: metrics(t, dump(t, r...))}
			},
			want: advise.Undetermined, rules: []string{"metrics-cannot-tell"}, mention: []string{"cold replicas (far below the fleet's median hit rate): 10.0.0.4:8000"},
		},
		{
			name: "metrics only, a replica without prefix metrics",
			why:  "one replica exports no prefix-cache counters: the fleet's figure leaves it out, and metrics alone cannot tell anyway",
			in: func(t *testing.T) Inputs {
				r := healthyReps(3)
				r[1].noPrefix = true
				return Inputs{Metrics: metrics(t, dump(t, r...))}
			},
			want: advise.Undetermined, rules: []string{"metrics-cannot-tell"}, mention: []string{"replicas without prefix-cache metrics: 10.0.0.2:8000"},
		},
		{
			name: "metrics only, the fleet already hits 97%",
			why:  "under today's routing only 3 points are left to gain, under 5: nothing, whatever the traffic",
			in: func(t *testing.T) Inputs {
				r := healthyReps(4)
				for i := range r {
					r[i].hits = 9.7e5
				}
				return Inputs{Metrics: metrics(t, dump(t, r...))}
			},
			want: advise.Nothing, rules: []string{"already-hits"},
		},
		{
			name: "an agent fanning out four siblings per task",
			why:  "the four copies of a task share its 2,000 tokens and nothing else is shared; round-robin puts them on four replicas (each computes the task), exact KV routers have no event for the first copy yet and spread them too, a router that records its own decisions (llm-d approximate) keeps them together: three of four hit, about 75 points. The routers: Ray's, SGLang's and production-stack's prefix routers record their own decisions and keep siblings together (about 75 points, one requirement each); llm-d's precise and Dynamo's KV routers wait for the engine's events, which the first copy has not sent when the others arrive",
			in:   reqs(agentFanOut(10, 80)),
			opts: four, want: advise.KVAwareRouter, rules: []string{"kv-router-saves"},
			first: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware"}, notFirst: []string{"llmd-precise", "dynamo-kv", "dynamo-round-robin", "prodstack-roundrobin", "litellm-simple-shuffle"},
		},
		{
			name: "an agent fanning out four siblings per task over a shared system prompt",
			why:  "every replica caches the 500-token system prompt, so round-robin, which spreads a task's four siblings over the four replicas, hits 500/2,500 = 20%; keeping siblings together hits the task's 2,000 tokens for three of four: (500 + 3 x 2,500) / (4 x 2,500) = 80%, +60 points. The router that does it (llm-d approximate) also scores the system prompt, so new tasks gather on the replica holding it (load max/mean over 2), but a task's siblings wait there only for the first one's prefill of their own prompt (0.2 s), which any placement that keeps them together costs, and a new task arrives every 0.5 s, after the last one's prefills (0.2 s + 3 x 2 ms): almost nothing waits for another task's work, so it is no hot spot (issue 22, failure 4: before, the siblings' wait made it one and the verdict was nothing): a KV-aware router. The routers: SGLang's cache_aware follows a prefix match only when it covers cache_threshold 0.5 of the request; a new task matches 500 of 2,500 tokens (20%), so it goes to the replica with the smallest tree, and its siblings (100%) follow it: tasks spread, siblings together, load about 1.0. Ray's prefix router follows a match from 10% (match_rate_threshold 0.1) and production-stack's any match: both send every new task to the replica holding the system prompt, which then queues (a hot spot, not ranked); llm-d's approximate scorer the same until its queue scorer pushes back",
			in:   reqs(agentFanOutShared(10, 80)),
			opts: four, want: advise.KVAwareRouter, rules: []string{"kv-router-saves"},
			first: []string{"sglang-cache-aware"}, notFirst: []string{"ray-prefix-affinity", "prodstack-prefixaware", "llmd-approx"},
		},

		{
			name: "an agent sending each task's four samples as four requests at once",
			why:  "80 tasks, each a unique 2,000-token prompt sent four times at one instant, a task every 0.5 s, no session ids; identical messages continue no conversation (they add nothing to it), so no sessions are inferred. Round-robin puts a task's four copies on four replicas, each computes it: 0% hit; a router that records its own decisions (llm-d approximate) keeps them together, the copies waiting only for the first one's prefill (twins, no hot spot): three of four hit their whole prompt but the last token's block, about 75 points: a KV-aware router. The copies are 240 of 320 requests, 75% of prompt tokens: send them as one request with n. The routers: as with n, the prefix routers that record their own decisions keep a prompt's copies together; the exact routers wait for events the first copy has not sent",
			in:   reqs(agentSeparate(10, 80)),
			opts: four, want: advise.KVAwareRouter, rules: []string{"kv-router-saves"}, mention: []string{"session affinity was not measured"},
			advice: []string{"240 requests repeat a prompt sent at the same moment (75.0% of prompt tokens): where the API allows, send them as one request with n"},
			first:  []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware"}, notFirst: []string{"llmd-precise", "dynamo-kv", "dynamo-round-robin", "prodstack-roundrobin", "litellm-simple-shuffle"},
		},
		// Issue 22's situations: the router a platform engineer would sign.
		{
			name: "chat with session ids in a header (issue 22, failure 1)",
			why:  "the chat case with each conversation's id in an x-session-id header: session affinity. The routers: production-stack's session router keys on a header, and kvcheck tunes its sessionKey to x-session-id, the header the traffic names its sessions in (a requirement met); it keeps each conversation on one replica and saves what every affinity router saves here (about 52% of today's prefill); Ray's prefix router saves as much with one requirement unknown and none met. Before, the met header counted as one requirement more and Ray was first with a worse TTFT p99; met requirements count for a row: production-stack's session router is first. LiteLLM's session_affinity does not read x-session-id (its pattern wants x-<vendor>-session-id, 8 characters or more), so it finds no id. vLLM Router's consistent_hash and rendezvous_hash key on x-session-id first (hash_key.rs:11-18), as shipped, with the header met too: the three tie on every count but the load, and whichever spreads these 40 sessions the evenest is first (rendezvous_hash, 1.10 against 1.20 and 1.50)",
			in:   reqs(headerSessions(conversations(2, 40, 4, true, nil))),
			opts: four, want: advise.SessionAffinity, rules: []string{"session-affinity-saves"},
			first: []string{"prodstack-session", "vllm-router-rendezvous-hash", "vllm-router-consistent-hash"}, notFirst: []string{"ray-prefix-affinity", "litellm-session-affinity"},
		},
		{
			name: "LiteLLM today, prompt caching marked on the last turn, LiteLLM session ids (issue 22, failure 2)",
			why:  "the chat case behind LiteLLM (--today litellm-simple-shuffle, the product the user runs) with metadata.session_id and a cache_control marker on each request's last message: session affinity. The routers: LiteLLM's prompt caching pins by the prefix up to the last marker, which is the newest message, so it never finds a pin: it saves what simple-shuffle does, nothing; LiteLLM's session_affinity keeps each conversation on one replica, both its requirements met (the proxy the user runs; the ids in the traffic), and is a session router: first, with the proxy the user already runs. Before, the top three were prefix routers at load max/mean 4.00 (the 64-token system prompt every conversation opens with draws every request to one replica, and nothing waits at this load) tied on everything but the name, so none was named and session_affinity was fifth",
			in:   reqs(cacheLast(conversations(2, 40, 4, true, nil))),
			opts: Options{Replicas: 4, KVTokens: 1 << 20, Today: "litellm-simple-shuffle"}, want: advise.SessionAffinity, rules: []string{"session-affinity-saves"},
			first: []string{"litellm-session-affinity"}, notFirst: []string{"litellm-prompt-caching", "prodstack-prefixaware", "ray-prefix-affinity", "sglang-cache-aware"},
		},
		{
			name: "200 tenants' prompts, more than the fleet holds (issue 22, failure 3)",
			why:  "200 prompts of about 1,000 tokens (200k) against 4 x 16k of KV: round-robin brings every tenant to every replica, whose LRU of 16 prompts holds about 16/200 of them (8%); a KV router gives each replica its quarter of the tenants, 50, of which it holds 16 (32%): over 20 points, a KV-aware router, and one named (before: none, a tie). The prefix routers and llm-d's differ by a point or so here (which replica holds which tenants); the balance routers and LiteLLM's save nothing",
			in:   reqs(tenants(7, 400, 200, 1000, nil, nil)),
			opts: Options{Replicas: 4, KVTokens: 16 << 10}, want: advise.KVAwareRouter, rules: []string{"kv-router-saves", "working-set-exceeds-replica"},
			first: []string{"ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware", "llmd-approx", "llmd-precise"}, notFirst: []string{"dynamo-round-robin", "prodstack-roundrobin", "litellm-simple-shuffle", "litellm-session-affinity", "litellm-prompt-caching"},
		},
		{
			name: "the same 12 tools in a random order on every request (issue 22, failure 5)",
			why:  "400 requests over a shared 500-token system prompt and 12 tools of about 150 tokens each, in a new order every time, then a 40-token question: the tool list differs from the second tool on (or the first), so nothing after the system prompt is shared (the audit's unstable-order, 99.9% of requests). Replaced by one order (the fixer sorts the list), every request shares the system prompt and the tools, about 2,300 of 2,350 tokens, which fit in every replica: round-robin finds them after the warm-up, the warm-up model says the rest is warm-up: fix first, then nothing. Before, the tool order could not be replaced, then was cannot tell yet, and a router saving 2.7% came with its configuration",
			in:   reqs(toolsShuffled(13, 400)),
			opts: four, want: advise.FixFirst, then: advise.Nothing, rules: []string{"breaker-costs", "no-option-pays"},
			mention: []string{"one fixed order (tool order: keys sorted, lists sorted) in the tools"},
		},
		{
			name: "prompts that open with the user's own text (issue 9, failure 4)",
			why:  "nothing generated sits before a shared prefix: there is none; nothing to fix and nothing to route",
			in:   reqs(userFirst(11, 120)),
			opts: four, want: advise.Nothing, rules: []string{"no-option-pays"},
		},
		{
			name: "--config litellm.yaml with prompt caching its only affinity, chat with session ids (issue 22, failure 6)",
			why:  "the chat case (40 conversations of 4 turns, metadata.session_id, 4 replicas): session affinity, as without the file. The file is the LiteLLM config kvcheck lint reports LL-03 on (two deployments of one model group, simple-shuffle, optional_pre_call_checks [prompt_caching] and nothing else): prompt caching is its only affinity, so the finding must reach the fixes with its rule id and the lint figure, and the advice under the verdict is about LiteLLM, the product the file shows, with that rule. The routers: the user runs LiteLLM (configured in litellm.yaml); LiteLLM's prompt caching as configured pins nothing on traffic without cache_control markers (its requirement missing), so it saves what simple-shuffle does; its session_affinity reads metadata.session_id (met) on the proxy the file shows (met) and keeps each conversation on one replica: a session router of the product the user runs, first; the prefix routers save as much but are neither",
			in: func(t *testing.T) Inputs {
				in := Inputs{Requests: conversations(2, 40, 4, true, nil).source(t)}
				in.Config, in.Files = configOf(t, map[string]string{"litellm.yaml": litellmPromptCaching})
				return in
			},
			opts: four, want: advise.SessionAffinity, rules: []string{"session-affinity-saves"},
			fixes: []string{"LL-03"}, evidence: []string{"LL-03 litellm/prompt-caching-only"},
			advice: []string{"LiteLLM: your configuration was checked", "LL-03 litellm/prompt-caching-only"},
			first:  []string{"litellm-session-affinity"}, notFirst: []string{"litellm-prompt-caching", "ray-prefix-affinity", "sglang-cache-aware", "prodstack-prefixaware", "llmd-approx", "llmd-precise"},
		},
		{
			name: "no config files, the demo's stack: production-stack's router as today (issue 22, failure 7)",
			why:  "the 40 tenants' 1,000-token prompts against 16k of KV a replica (a KV-aware router, worked out above) behind production-stack's router in round-robin (--today prodstack-roundrobin, as the demo runs it): the user runs production-stack. Every prefix router that keeps a tenant's prompt on one replica reaches the same hits after the warm-up: production-stack's prefixaware serves within the 5-point stack margin of the best (the same whole points), so it is first; Ray Serve and SGLang's gateway have no fewer requirements unknown (one each, as prefixaware's values) and would be a change of serving stack: not first on the strength of their requirements",
			in:   reqs(tenants(7, 400, 40, 1000, nil, nil)),
			opts: Options{Replicas: 4, KVTokens: 16 << 10, Today: "prodstack-roundrobin"}, want: advise.KVAwareRouter, rules: []string{"kv-router-saves"},
			first: []string{"prodstack-prefixaware"}, notFirst: []string{"ray-prefix-affinity", "sglang-cache-aware", "llmd-approx", "llmd-precise", "dynamo-kv"},
		},
		{
			name: "Ray's snippet: the request router in the model's LLMConfig (issue 22, failure 8)",
			why:  "the 40 tenants' prompts (a KV-aware router) ranked over Ray's prefix router and llm-d's two: the three save the same whole points, Ray's needs one requirement (its Serve application) and llm-d's two or three, so Ray's is first by the smaller change. Its configuration to apply must load in Ray: a Serve config whose application builds Ray Serve LLM's OpenAI app, request_router_config inside the model's LLMConfig deployment_config (applications[].args.llm_configs[].deployment_config); before, it nested request_router_config under deployment_config in a deployments[] entry, a key Ray's deployment schema does not have there",
			in:   reqs(tenants(7, 400, 40, 1000, nil, nil)),
			opts: Options{Replicas: 4, KVTokens: 16 << 10, Routers: emulations(t, "ray-prefix-affinity", "llmd-approx", "llmd-precise")}, want: advise.KVAwareRouter, rules: []string{"kv-router-saves"},
			first:      []string{"ray-prefix-affinity"},
			snippet:    []string{"applications[].args.llm_configs[].deployment_config.request_router_config", "    llm_configs:\n", "      deployment_config:\n        request_router_config:\n          request_router_class: ray.serve.llm.request_router.PrefixCacheAffinityRouter\n"},
			notSnippet: []string{"deployments:"},
		},
		{
			name: "session affinity, LiteLLM configured: its session router judged over seeds (issue 22, the verdict and the ranking agree)",
			why:  "testdata/assess/chat_sessions.jsonl (120 requests in 30 conversations of 4 turns, metadata.session_id, no arrival times) on 8 replicas with the LiteLLM config: within-session reuse only (the audit's cross-session reuse is 0), so a KV-aware router can serve no more than session affinity, which serves it all: session affinity. The session routers: vLLM Router's hashes read a session header the requests lack (missing: every chat hashed alike, one replica); production-stack's session router as shipped has no session key and refuses to start; LiteLLM's session_affinity places each conversation's first request by a uniform draw (simple-shuffle) and pins it, so it serves every turn after the first from cache as session affinity does (+56.7 points, the min gain). Its load is a draw: 30 conversations over 8 replicas average 3.75, and a replica drawing 8 or more (load max/mean 32/15 = 2.13 >= 2.0, a hot spot where the arrival times are made up and the imbalance alone decides) has probability about 0.03 a replica, 0.2 over 8. Seed 1's draw is such a one (44 of 120 requests on one replica, 2.93: before rows were judged over seeds it decided the row, no session router stood for the verdict and none was named first). Judged over seeds 1-5 the row is a hot spot only when 3 of the 5 are, probability about 10 x 0.2^3 x 0.8^2 + 5 x 0.2^4 x 0.8 + 0.2^5 = 0.058; these five are not (the row says on how many it was): LiteLLM's session router stands for the verdict, the product the user runs and a session router, and comes first",
			in: func(t *testing.T) Inputs {
				path := filepath.Join("..", "..", "testdata", "assess", "chat_sessions.jsonl")
				in := Inputs{Requests: &RequestLog{Name: path, Open: func() (io.ReadCloser, error) { return os.Open(path) }}}
				in.Config, in.Files = configOf(t, map[string]string{"litellm.yaml": litellmPromptCaching})
				return in
			},
			opts: Options{Replicas: 8, KVTokens: 1 << 20}, want: advise.SessionAffinity, rules: []string{"session-affinity-saves"},
			first: []string{"litellm-session-affinity"},
			seeds: map[string]func(*rank.SeedSpread) bool{"litellm-session-affinity": func(sp *rank.SeedSpread) bool {
				// Seed 1 put 44 of 120 requests on one replica (44/15 = 2.93); fewer than 3 of
				// the 5 are hot spots.
				return sp.Seeds[0] == 1 && sp.LoadMax >= 44.0/15-1e-9 && sp.HotSpots >= 1 && sp.HotSpots < 3
			}},
			notFirst: []string{"sglang-cache-aware", "dynamo-kv", "llmd-approx", "llmd-precise", "prodstack-prefixaware", "ray-prefix-affinity", "aibrix-prefix-cache", "kthena-router"},
		},
		{
			name: "five tenants' prompts, users named by OpenAI's user field (issue 9, failure 2)",
			why:  "the user field is no session, so a user moving between tenants is no broken session; 5 prompts of 1,000 tokens fit in every replica: nothing",
			in: func(t *testing.T) Inputs {
				return Inputs{Requests: tenants(12, 160, 5, 1000, nil, func(i int) string { return fmt.Sprintf("user-%d", i%7) }).source(t)}
			},
			opts: four, want: advise.Nothing, rules: []string{"no-option-pays"},
		},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			o := sc.opts
			o.Thresholds = th
			rec, rk, err := assessRanked(context.Background(), sc.in(t), o, true)
			if err != nil {
				t.Fatal(err)
			}
			if os.Getenv("KVCHECK_SHOW_RANKING") != "" {
				t.Logf("verdict %s then %s router %q", rec.Verdict, rec.Then, rec.Router)
				if rk != nil {
					t.Logf("no winner %q first by %q traffic %q", rk.NoWinner, rk.FirstBy, rk.Traffic)
					for _, r := range rk.Rows[:min(6, len(rk.Rows))] {
						t.Logf("  %d %s %s hit %.3f saved %.3f load %.2f conc %v met %d missing %d unmet %d p99 %.3f %s", r.Rank, r.Name(), r.Family, r.HitRate, r.PrefillSaved, r.LoadMaxOverMean, r.Concentrates, r.Met(), r.Missing(), r.Unmet(), r.TTFTP99, r.Excluded)
					}
				}
			}
			var rules []string
			for _, r := range rec.Reasons {
				rules = append(rules, r.Rule)
			}
			show := func() string {
				var b strings.Builder
				for _, r := range rec.Reasons {
					fmt.Fprintf(&b, "  [%s %s against=%v] %s\n", r.Rule, r.Verdict, r.Against, r.Text)
				}
				for _, e := range rec.Evidence {
					fmt.Fprintf(&b, "  %s: %s = %s\n", e.ID, e.What, e.Figure)
				}
				return b.String()
			}
			if rec.Verdict != sc.want || rec.Then != sc.then {
				t.Fatalf("verdict %s then %q, want %s then %q (%s)\n%s", rec.Verdict, rec.Then, sc.want, sc.then, sc.why, show())
			}
			for _, r := range sc.rules {
				if !slices.Contains(rules, r) {
					t.Errorf("no reason %s among %v\n%s", r, rules, show())
				}
			}
			for _, m := range sc.mention {
				if !slices.ContainsFunc(rec.Reasons, func(r advise.Reason) bool { return strings.Contains(r.Text, m) }) {
					t.Errorf("no reason mentions %q\n%s", m, show())
				}
			}
			for _, code := range sc.fixes {
				if !slices.ContainsFunc(rec.Fixes, func(f finding.Finding) bool { return f.Rule == code }) {
					t.Errorf("no fix with rule %s among %+v", code, rec.Fixes)
				}
			}
			for _, m := range sc.evidence {
				if !slices.ContainsFunc(rec.Evidence, func(e advise.Evidence) bool { return strings.Contains(e.Figure, m) }) {
					t.Errorf("no figure says %q\n%s", m, show())
				}
			}
			if sc.snippet != nil || sc.notSnippet != nil {
				if rk == nil || rk.Snippet == nil {
					t.Fatalf("no configuration to apply, want one holding %q", sc.snippet)
				}
				text := rk.Snippet.Where + "\n" + rk.Snippet.Text
				for _, m := range sc.snippet {
					if !strings.Contains(text, m) {
						t.Errorf("the configuration to apply lacks %q:\n%s", m, text)
					}
				}
				for _, m := range sc.notSnippet {
					if strings.Contains(text, m) {
						t.Errorf("the configuration to apply holds %q:\n%s", m, text)
					}
				}
			}
			for _, m := range sc.advice {
				if !slices.ContainsFunc(rec.Advice, func(a string) bool { return strings.Contains(a, m) }) {
					t.Errorf("no advice says %q in %q", m, rec.Advice)
				}
			}
			checkRanking(t, rec, rk, th)
			if rk == nil || len(rk.Rows) == 0 {
				if sc.first != nil || sc.unnamed {
					t.Errorf("no ranking; want a first among %v", sc.first)
				}
				return
			}
			for p, ok := range sc.seeds {
				i := slices.IndexFunc(rk.Rows, func(r rank.Row) bool { return r.Policy == p && r.Variant == rank.Shipped })
				if i < 0 || rk.Rows[i].Seeds == nil || !ok(rk.Rows[i].Seeds) {
					t.Errorf("%s: seeds not as worked out\n%s", p, showRanking(rk))
				}
			}
			first := rk.Rows[0]
			if sc.first != nil && (first.Rank != 1 || !slices.Contains(sc.first, first.Policy)) {
				t.Errorf("first %s (rank %d), want one of %v\n%s", first.Name(), first.Rank, sc.first, showRanking(rk))
			}
			if sc.noFirst && rk.NoWinner == "" {
				t.Errorf("%s named first, want none\n%s", first.Name(), showRanking(rk))
			}
			if first.Rank == 1 && rk.NoWinner == "" && slices.Contains(sc.notFirst, first.Policy) {
				t.Errorf("first %s, which may not be first (%v)\n%s", first.Name(), sc.notFirst, showRanking(rk))
			}
			if unnamed := slices.ContainsFunc(rec.Reasons, func(r advise.Reason) bool { return r.Rule == "router-unnamed" }); unnamed != sc.unnamed {
				t.Errorf("router-unnamed %v, want %v (router %q)\n%s\n%s", unnamed, sc.unnamed, rec.Router, show(), showRanking(rk))
			}
		})
	}
}

func linesOf(t *testing.T, l *reqLog) string {
	t.Helper()
	rc, err := l.source(t).Open()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOneTraffic: a request log and a trace given together are not mixed; the request log is
// replayed and the evidence says the trace was not.
func TestOneTraffic(t *testing.T) {
	tr := &sim.Trace{Name: "other.jsonl", Format: "mooncake", BlockSize: 512, PrefixInfo: true,
		Requests: []sim.Request{{Arrival: 0, Blocks: []uint64{1}, InputTokens: 600, OutputTokens: 1, N: 1}}}
	rec, err := Assess(context.Background(), Inputs{Requests: tenants(6, 40, 1, 500, nil, nil).source(t), Trace: tr},
		Options{Thresholds: advise.DefaultThresholds(), Replicas: 2, KVTokens: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, e := range rec.Evidence {
		ids[e.ID] = e.Figure
	}
	if ids["replay.unused"] != "trace other.jsonl" || !strings.HasPrefix(ids["replay.traffic"], "40 requests") {
		t.Errorf("unused %q, traffic %q: want the request log replayed and the trace named as not", ids["replay.unused"], ids["replay.traffic"])
	}
}

// TestSessionCount: the evidence counts sessions of two requests or more; a request no other
// continues (an agent's task, a single question) is no session evidence. 40 conversations of
// 4 turns (ids or continuity) are 40 sessions holding all 160 requests; 80 unrelated tasks
// are none.
func TestSessionCount(t *testing.T) {
	for _, c := range []struct {
		l    *reqLog
		want string
	}{
		{conversations(2, 40, 4, true, nil), "160 requests, all in 40 sessions of two or more, "},
		{conversations(3, 40, 4, false, nil), "160 requests, all in 40 sessions of two or more, "},
		// No session: the clause is left out, not written as 0 of them in 0 sessions.
		{agentFanOut(10, 80), "80 requests, 161k prompt tokens"},
	} {
		rec, err := Assess(context.Background(), Inputs{Requests: c.l.source(t)}, Options{Thresholds: advise.DefaultThresholds(), Replicas: 2, KVTokens: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, e := range rec.Evidence {
			if e.ID == "requests.count" {
				got = e.Figure
			}
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: requests.count = %q, want %q...", c.l.name, got, c.want)
		}
	}
}

// checkRanking holds the ranking rule's invariants on one assessment (issue 22), whatever the
// traffic: a router verdict names the ranking's first row, of the verdict's kind and serving
// the min gain over today's routing, or says why none is named; any other verdict names no
// router and gets no configuration; a first row that serves the min gain over today's routing
// never sits under a "nothing" but from the warm-up model; and a first row that concentrates
// requests has no balanced row of its kind within the balanced margin behind it.
func checkRanking(t *testing.T, rec advise.Recommendation, rk *rank.Ranking, th advise.Thresholds) {
	t.Helper()
	route := rec.Verdict
	if route == advise.FixFirst {
		route = rec.Then
	}
	router := route == advise.SessionAffinity || route == advise.KVAwareRouter
	if rk == nil || len(rk.Rows) == 0 || rk.Rows[0].Rank != 1 {
		if rec.Router != "" {
			t.Errorf("router %q without a ranked first", rec.Router)
		}
		return
	}
	first := rk.Rows[0]
	family := map[advise.Verdict]string{advise.SessionAffinity: rank.FamilySession, advise.KVAwareRouter: rank.FamilyKV}[route]
	switch {
	case router && rec.Router != "":
		if rec.Router != first.Name() || first.Family != family || first.HitRate-rk.TodayHitRate < th.MinGain-1e-9 || rk.Snippet == nil && rank.SnippetFor(first) != nil {
			t.Errorf("%s names %q; the first is %s (%s, %+.1f points over today's), snippet %v\n%s", route, rec.Router, first.Name(), first.Family, 100*(first.HitRate-rk.TodayHitRate), rk.Snippet != nil, showRanking(rk))
		}
	case router:
		if !slices.ContainsFunc(rec.Reasons, func(r advise.Reason) bool { return r.Rule == "router-unnamed" }) {
			t.Errorf("%s names no router and says not why\n%s", route, showRanking(rk))
		}
	default:
		if rec.Router != "" || rk.Snippet != nil {
			t.Errorf("%s names router %q, snippet %v", route, rec.Router, rk.Snippet != nil)
		}
	}
	if route == advise.Nothing && first.HitRate-rk.TodayHitRate >= th.MinGain-1e-9 &&
		!slices.ContainsFunc(rec.Reasons, func(r advise.Reason) bool { return r.Rule == "warm-up-amortises" }) {
		t.Errorf("nothing, while the first row %s serves %+.1f points over today's\n%s", first.Name(), 100*(first.HitRate-rk.TodayHitRate), showRanking(rk))
	}
	if first.Concentrates {
		for _, r := range rk.Rows[1:] {
			if r.Rank > 0 && !r.Concentrates && (!router || r.Family == first.Family) && r.Missing() <= first.Missing() &&
				math.Round(100*r.PrefillSaved) >= math.Round(100*first.PrefillSaved)-float64(rk.Rules.BalancedMargin) {
				t.Errorf("the first %s concentrates (load max/mean %.2f) while %s, balanced, saves %.1f%%\n%s", first.Name(), first.LoadMaxOverMean, r.Name(), 100*r.PrefillSaved, showRanking(rk))
			}
		}
	}
}

func showRanking(rk *rank.Ranking) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  today %s hit %.3f, answer %q, first by %q, no winner %q\n", rk.Today, rk.TodayHitRate, rk.Answer, rk.FirstBy, rk.NoWinner)
	for _, r := range rk.Rows {
		fmt.Fprintf(&b, "  %d %s [%s] hit %.3f saved %+.3f load %.2f concentrates %v met %d missing %d p99 %.3f %s\n", r.Rank, r.Name(), r.Family, r.HitRate, r.PrefillSaved, r.LoadMaxOverMean, r.Concentrates, r.Met(), r.Missing(), r.TTFTP99, r.Excluded)
	}
	for _, w := range rk.Why {
		fmt.Fprintf(&b, "  why: %s\n", w)
	}
	return b.String()
}

// litellmPromptCaching is a LiteLLM proxy config whose only affinity is prompt caching: two
// deployments of one model group, simple-shuffle, optional_pre_call_checks [prompt_caching]
// (kvcheck lint: LL-03 litellm/prompt-caching-only).
const litellmPromptCaching = `model_list:
  - model_name: qwen
    litellm_params:
      model: hosted_vllm/Qwen/Qwen2.5-7B-Instruct
      api_base: http://vllm-0:8000/v1
  - model_name: qwen
    litellm_params:
      model: hosted_vllm/Qwen/Qwen2.5-7B-Instruct
      api_base: http://vllm-1:8000/v1
router_settings:
  routing_strategy: simple-shuffle
  optional_pre_call_checks: ["prompt_caching"]
`

// quiet is a Status that says nothing.
type quiet struct{}

func (quiet) Note(string, ...any)     {}
func (quiet) Warn(string, ...any)     {}
func (quiet) Progress(string, ...any) {}
func (quiet) Done()                   {}

// configOf checks the files (name -> text) as kvcheck assess --config does.
func configOf(t *testing.T, files map[string]string) (*advise.Config, *product.Files) {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	cfg, f, err := checkConfig(context.Background(), quiet{}, paths, "")
	if err != nil {
		t.Fatal(err)
	}
	return cfg, f
}

// emulations are the named router emulations as shipped, for Options.Routers.
func emulations(t *testing.T, names ...string) []sim.PolicyInfo {
	var out []sim.PolicyInfo
	for _, n := range names {
		e, ok := router.Emulation(n, nil)
		if !ok {
			t.Fatalf("no emulation %s", n)
		}
		out = append(out, e)
	}
	return out
}
