package assess

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// Situations worked by hand on Mooncake traces, whose 512-token blocks make the arithmetic
// short. The model facts used: a prompt of N tokens hits at most floor((N-1)/512) blocks;
// round-robin sends request i to replica i mod R; requests 10 s apart never queue (a prefill of
// a few thousand tokens takes well under a second); the gains count the second half of the
// requests; the threshold is 5 points.

// mooncakeRow is one line of a Mooncake trace.
type mooncakeRow struct {
	Timestamp int      `json:"timestamp"` // milliseconds
	Input     int      `json:"input_length"`
	Output    int      `json:"output_length"`
	HashIDs   []uint64 `json:"hash_ids"`
	Session   string   `json:"session_id,omitempty"`
}

// mooncake reads rows as kvcheck assess --trace reads a Mooncake file.
func mooncake(t *testing.T, name string, rows []mooncakeRow) *sim.Trace {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	tr, err := sim.ReadMooncake(strings.NewReader(b.String()), name, 512)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// lockstepChat is n conversations of `turns` turns sent in lockstep (turn 1 of every
// conversation, then turn 2, ...), 10 s apart: turn k's prompt is the conversation so far, 2k
// blocks of 512 tokens (1024k tokens), each turn adding two blocks.
func lockstepChat(t *testing.T, n, turns int) *sim.Trace {
	var rows []mooncakeRow
	at := 0
	for k := 1; k <= turns; k++ {
		for c := range n {
			var ids []uint64
			for b := range 2 * k {
				ids = append(ids, uint64(c*10_000+b))
			}
			rows = append(rows, mooncakeRow{Timestamp: at, Input: 1024 * k, Output: 100, HashIDs: ids, Session: fmt.Sprintf("c%d", c)})
			at += 10_000
		}
	}
	return mooncake(t, fmt.Sprintf("chat%dx%d.jsonl", n, turns), rows)
}

func TestHandWorked(t *testing.T) {
	th := advise.DefaultThresholds()
	for _, c := range []struct {
		name string
		// why is the arithmetic behind the answer.
		why     string
		trace   func(t *testing.T) *sim.Trace
		opts    Options
		want    advise.Verdict
		conf    advise.Level
		rule    string
		mention string
	}{
		{
			name: "long conversations on two replicas, just above the threshold",
			why: "7 conversations, odd, so round-robin alternates each conversation's turns between the two replicas: " +
				"turn k finds turn k-2's prompt, 2(k-2) blocks, where session affinity (and a KV router) finds turn k-1's, 2(k-1): " +
				"2 blocks more per turn. The gains count requests 70..139, turns 11..20: 20 blocks of sum_{k=11..20} 2k = 310, " +
				"+6.45 points: session affinity; the KV router adds nothing more. Margin 1.45 < 2.5 and 140 < 1000 requests: low",
			trace: func(t *testing.T) *sim.Trace { return lockstepChat(t, 7, 20) },
			opts:  Options{Replicas: 2, KVBlocks: 1024},
			want:  advise.SessionAffinity, conf: advise.Low, rule: "session-affinity-saves",
			mention: "+6.5 points of all prefill",
		},
		{
			name: "the same conversations, 30 turns: under the threshold",
			why: "as above, the gains count turns 16..30: 15 x 2 = 30 blocks of 2 x sum_{k=16..30} k = 690: +4.35 points, " +
				"under 5: nothing",
			trace: func(t *testing.T) *sim.Trace { return lockstepChat(t, 7, 30) },
			opts:  Options{Replicas: 2, KVBlocks: 1024},
			want:  advise.Nothing, rule: "no-option-pays",
			mention: "the best, session, saves +4.3 points",
		},
		{
			name: "three conversations of two turns: too little traffic",
			why: "6 requests; the gains count the 3 second turns, each a third of the tokens counted: whether one of them " +
				"lands on its conversation's replica moves the gain by 33 points, so no answer rests on it (the replay " +
				"decides from 21 requests after the warm-up): cannot tell yet. Before, this said nothing at medium " +
				"confidence: no shared prefix arrives after the warm-up in a trace that ends at the second turn",
			trace: func(t *testing.T) *sim.Trace { return lockstepChat(t, 3, 2) },
			opts:  Options{Replicas: 4, KVBlocks: 1024},
			want:  advise.Undetermined, conf: advise.Low, rule: "too-little-traffic",
			mention: "only 3 requests come after the warm-up (the first 3 of 6 warm the caches up)",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.opts
			o.Thresholds = th
			rec, err := Assess(context.Background(), Inputs{Trace: c.trace(t)}, o)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Verdict != c.want || (c.conf != "" && rec.Confidence != c.conf) {
				t.Fatalf("verdict %s (%s), want %s (%s): %s\n%s", rec.Verdict, rec.Confidence, c.want, c.conf, c.why, showRec(rec))
			}
			if !slices.ContainsFunc(rec.Reasons, func(r advise.Reason) bool { return r.Rule == c.rule && strings.Contains(r.Text, c.mention) }) {
				t.Errorf("no reason %s mentioning %q\n%s", c.rule, c.mention, showRec(rec))
			}
		})
	}
}

// TestBurstWarmUp: a burst whose requests all arrive at one instant still leaves its first half
// out of the gains. 40 tenants' prompts of 2 blocks (1,024 tokens) and a unique third block,
// 400 requests at 0 s, 4 replicas of 1024 blocks: every prompt fits everywhere, so after the
// warm-up round-robin misses only prompts a replica has not met yet. Counted from request 200,
// round-robin's hit rate after the warm-up is above its whole-replay one (the cold misses fall
// in the first half); before, the time cut (arrival >= 0 s) counted every request, the two were
// equal, and the evidence still said "the first 0 s (half the requests)" were left out.
func TestBurstWarmUp(t *testing.T) {
	var rows []mooncakeRow
	for i := range 400 {
		tenant := uint64(i*7919%40) * 10
		rows = append(rows, mooncakeRow{Timestamp: 0, Input: 1536, Output: 100, HashIDs: []uint64{tenant + 1, tenant + 2, uint64(100_000 + i)}})
	}
	rec, err := Assess(context.Background(), Inputs{Trace: mooncake(t, "burst.jsonl", rows)},
		Options{Thresholds: advise.DefaultThresholds(), Replicas: 4, KVBlocks: 1024})
	if err != nil {
		t.Fatal(err)
	}
	ev := map[string]string{}
	for _, e := range rec.Evidence {
		ev[e.ID] = e.Figure
	}
	if want := "the first 200 of 400 requests (up to 0 s)"; ev["replay.warmup"] != want {
		t.Errorf("replay.warmup = %q, want %q", ev["replay.warmup"], want)
	}
	var whole, steady float64
	if _, err := fmt.Sscanf(ev["replay.policy.round-robin"], "hit %f%% over the whole replay, %f%% after warm-up", &whole, &steady); err != nil {
		t.Fatalf("replay.policy.round-robin = %q: %v", ev["replay.policy.round-robin"], err)
	}
	if steady <= whole {
		t.Errorf("round-robin hits %.2f%% after the warm-up and %.2f%% over the whole replay: the warm-up's cold misses were counted\n%s", steady, whole, showRec(rec))
	}
}

func showRec(rec advise.Recommendation) string {
	var b strings.Builder
	for _, r := range rec.Reasons {
		fmt.Fprintf(&b, "  [%s %s against=%v] %s\n", r.Rule, r.Verdict, r.Against, r.Text)
	}
	for _, e := range rec.Evidence {
		fmt.Fprintf(&b, "  %s: %s = %s\n", e.ID, e.What, e.Figure)
	}
	return b.String()
}

// tenantsTrace is 400 requests, one a second, each opening with one of 40 tenants' 2-block
// prompts (1,024 tokens, drawn with a fixed stride) and a block of its own: 1,536 tokens.
func tenantsTrace(t *testing.T) *sim.Trace {
	var rows []mooncakeRow
	for i := range 400 {
		tenant := uint64(i*7919%40) * 10
		rows = append(rows, mooncakeRow{Timestamp: i * 1000, Input: 1536, Output: 100, HashIDs: []uint64{tenant + 1, tenant + 2, uint64(100_000 + i)}})
	}
	return mooncake(t, "tenants.jsonl", rows)
}

// TestTodayAlreadyRoutes: with --today naming a router that already does what the options do,
// "nothing" means keep it, and the report says so rather than "prefix-aware routing would not
// pay because every replica warms up on its own".
func TestTodayAlreadyRoutes(t *testing.T) {
	th := advise.DefaultThresholds()
	for _, c := range []struct {
		name    string
		why     string
		in      func(t *testing.T) Inputs
		opts    Options
		mention string
		against string
	}{
		{
			name: "today is llm-d's exact scorer on tenants' prompts that do not fit",
			why: "80 prompt blocks against 32 per replica: round-robin would lose most of them (the KV router's case), " +
				"but today's kv-llmd already gives each replica its share of tenants, and the other KV policies place " +
				"them the same way: no option adds 5 points over it",
			in:      func(t *testing.T) Inputs { return Inputs{Trace: tenantsTrace(t)} },
			opts:    Options{Replicas: 4, KVBlocks: 32, Today: "kv-llmd"},
			mention: "today's kv-llmd is itself a KV-aware policy, so it already captures the reuse the options would",
		},
		{
			name: "today is session affinity on chat",
			why:  "the lockstep chat of 20 turns: session affinity already finds turn k-1's prompt; the KV policies find the same",
			in:   func(t *testing.T) Inputs { return Inputs{Trace: lockstepChat(t, 7, 20)} },
			opts: Options{Replicas: 2, KVBlocks: 1024, Today: "session"}, mention: "today's session is itself session affinity",
		},
		{
			name: "today is llm-d's approximate scorer on an agent over a shared system prompt",
			why: "the scenario suite's agent: llm-d approximate keeps each task's four siblings together and serves about 80% " +
				"from cache; its prefix score on the shared system prompt sends new tasks to the replica holding it (load " +
				"max/mean over 2), but there the siblings wait only for their own prompt's first prefill, so it is no hot spot; " +
				"the other options spread siblings and serve about 20%: every option serves less, so nothing",
			in:      func(t *testing.T) Inputs { return Inputs{Requests: agentFanOutShared(10, 80).source(t)} },
			opts:    Options{Replicas: 4, KVTokens: 1 << 20, Today: "approx-prefix"},
			mention: "every option serves less from cache",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.opts
			o.Thresholds = th
			rec, err := Assess(context.Background(), c.in(t), o)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Verdict != advise.Nothing {
				t.Fatalf("verdict %s, want nothing: %s\n%s", rec.Verdict, c.why, showRec(rec))
			}
			if !slices.ContainsFunc(rec.Reasons, func(r advise.Reason) bool { return r.Rule == "no-option-pays" && strings.Contains(r.Text, c.mention) }) {
				t.Errorf("no-option-pays does not say %q\n%s", c.mention, showRec(rec))
			}
			if c.against != "" && !slices.ContainsFunc(rec.Reasons, func(r advise.Reason) bool { return r.Rule == c.against && r.Against }) {
				t.Errorf("no reason %s against the verdict\n%s", c.against, showRec(rec))
			}
		})
	}
}

// TestMetricsWindowVolume: metrics alone decide "nothing" at a fleet hit rate of 95% or more,
// but only over enough traffic. Two dumps a minute apart of four replicas: each looked up 250
// more tokens and hit 242.5 (97%) while finishing one more request: 4 requests in all, each on
// average 25% of the tokens, so one more miss would be 25 points: cannot tell yet (before:
// nothing, medium). The same 97% over 100 requests a replica (400) decides: nothing.
func TestMetricsWindowVolume(t *testing.T) {
	for _, c := range []struct {
		perReplica float64
		want       advise.Verdict
		rule       string
		volume     string // 4 x 250 tokens a request; 100,000 and more read with k
	}{
		{1, advise.Undetermined, "too-little-traffic", "1000 prompt tokens looked up, 4 requests"},
		{100, advise.Nothing, "already-hits", "100k prompt tokens looked up, 400 requests"},
	} {
		before := healthyReps(4)
		after := healthyReps(4)
		for i := range after {
			after[i].queries += 250 * c.perReplica
			after[i].hits += 242.5 * c.perReplica
			after[i].success += c.perReplica
		}
		rec, err := Assess(context.Background(), Inputs{Metrics: metrics(t, dump(t, before...), dump(t, after...))}, Options{Thresholds: advise.DefaultThresholds()})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Verdict != c.want || rec.Reasons[0].Rule != c.rule {
			t.Errorf("%.0f requests a replica: verdict %s (%s), want %s (%s)\n%s", c.perReplica, rec.Verdict, rec.Reasons[0].Rule, c.want, c.rule, showRec(rec))
		}
		want := c.volume
		if !slices.ContainsFunc(rec.Evidence, func(e advise.Evidence) bool { return e.ID == "hitrate.volume" && e.Figure == want }) {
			t.Errorf("no hitrate.volume %q\n%s", want, showRec(rec))
		}
	}
}
