package assess

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// oneSharedBlock is eight 32-token requests 1 s apart, each of the shared block 1 and one
// block of its own (16-token blocks): each is done (32 tokens of prefill, one output token)
// long before the next arrives, so no router sees any load at an arrival.
func oneSharedBlock() *sim.Trace {
	tr := &sim.Trace{Name: "shared", Format: "mooncake", BlockSize: 16, PrefixInfo: true}
	for i := range 8 {
		tr.Requests = append(tr.Requests, sim.Request{Arrival: float64(i), Blocks: []uint64{1, uint64(100 + i)}, InputTokens: 32, OutputTokens: 1})
	}
	return tr
}

func steadyHitOf(t *testing.T, rp *advise.Replay, name string) float64 {
	t.Helper()
	for _, p := range rp.Policies {
		if p.Name == name {
			return p.SteadyHitRate
		}
	}
	t.Fatalf("%s not replayed: %+v", name, rp.Policies)
	return 0
}

// TestTodayEmulation: --today takes a shipped router, replayed as it ships. On oneSharedBlock
// and 8 replicas (warm-up: requests 0-3, so requests 4-7 count, 64 tokens of which block 1 is
// 16 each):
//   - dynamo-round-robin sends request i to replica i: no request finds block 1 where it lands,
//     steady hit 0.
//   - dynamo-kv (shipped: events, credit 1, weight 1, decay 0): request 0 sees equal costs
//     everywhere (2 prefill blocks + 2 decode blocks) and lands on some replica r; from then on r
//     holds block 1, so each request's cost is 2 - 1 + 2 = 3 on r against 4 elsewhere: all on r,
//     and requests 4-7 each hit block 1: 4 x 16 / 4 x 32 = 0.5.
//
// The ranking's today replays it the same way: its today hit rate is 0.5 too.
func TestTodayEmulation(t *testing.T) {
	sh := Shape{Replicas: 8, KVTokens: 16 * 1000, ReplicasFrom: advise.ShapeFlag}
	for _, c := range []struct {
		today string
		want  float64
	}{{"dynamo-round-robin", 0}, {"dynamo-kv", 0.5}} {
		o := Options{Today: c.today, Thresholds: advise.DefaultThresholds()}
		if err := Check(Sources{Trace: "shared.jsonl", Tokenize: audit.DefaultTokenize}, o, false); err != nil {
			t.Fatalf("%s refused: %v", c.today, err)
		}
		rp, err := Replay(context.Background(), oneSharedBlock(), "trace", sh, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := steadyHitOf(t, rp, c.today); got != c.want {
			t.Errorf("%s: steady hit %v, want %v", c.today, got, c.want)
		}
		o.Routers = []sim.PolicyInfo{{Name: "round-robin"}}
		rk, err := Rank(context.Background(), oneSharedBlock(), sh, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rk.Today != c.today || rk.TodayHitRate != c.want || rk.TodayFrom != "" {
			t.Errorf("%s: ranking's today %s from %q at %v, want %v", c.today, rk.Today, rk.TodayFrom, rk.TodayHitRate, c.want)
		}
	}
}

// TestTodayRefused: a name that is neither kind is a usage error listing both kinds; an
// emulation that cannot run as today's routing is a usage error saying why: a text-reading
// router on a trace of block hashes (production-stack's session router reads a header), and a
// router the --config files configure with settings it refuses (there, the file and line say
// which settings were used).
func TestTodayRefused(t *testing.T) {
	err := Check(Sources{Trace: "shared.jsonl", Tokenize: audit.DefaultTokenize}, Options{Today: "fastest", Thresholds: advise.DefaultThresholds()}, false)
	if !usage.Is(err) || !strings.Contains(err.Error(), "kv-cost") || !strings.Contains(err.Error(), "litellm-simple-shuffle") || !strings.Contains(err.Error(), "prodstack-session") {
		t.Errorf("unknown --today: %v", err)
	}
	bad := dynamo.Shipped()
	bad.CreditDecay = -1
	files := &product.Files{Routers: []product.Configured{{Policy: "dynamo-kv", Where: "frontend.yaml:12", Settings: bad}}}
	for _, c := range []struct {
		today string
		files *product.Files
		want  []string
	}{
		{"litellm-simple-shuffle", nil, nil},
		{"prodstack-prefixaware", nil, []string{"--today prodstack-prefixaware (as shipped) cannot stand for today's routing on shared", "holds only block hashes", "--requests"}},
		{"prodstack-session", nil, []string{"--today prodstack-session (as shipped)", "holds only block hashes"}},
		{"dynamo-kv", files, []string{"--today dynamo-kv (as configured in frontend.yaml:12)", "--router-kv-overlap-score-credit-decay -1"}},
		// Shipped, the same router runs.
		{"dynamo-kv", nil, nil},
	} {
		_, err := Assess(context.Background(), Inputs{Trace: oneSharedBlock(), Files: c.files}, Options{Today: c.today, Replicas: 8, KVTokens: 16000, Thresholds: advise.DefaultThresholds()})
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.today, err)
			}
			continue
		}
		var ce *sim.CannotRunError
		if err == nil || !usage.Is(err) || errors.As(err, &ce) {
			t.Errorf("%s: want a usage error, got %v", c.today, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.today, err, w)
			}
		}
	}
}

// TestTodayConfigured: with --config showing today's router, today runs with the file's
// settings. oneSharedBlock's requests carry the header x-session-id: s1 (what a request log
// gives production-stack's session router), 8 replicas, requests 4-7 counted:
//   - as shipped (no --session-key) the router does not start: a usage error naming the key;
//   - configured with sessionKey x-session-id, every request has the id s1, which one replica
//     owns on the ring: all eight land there and requests 4-7 each hit block 1: 0.5;
//   - configured with sessionKey x-user, no request has the header: the QPS fallback sends each
//     to the first replica with no request yet, request i to replica i: no hit, 0.
func TestTodayConfigured(t *testing.T) {
	tr := func() *sim.Trace {
		tr := oneSharedBlock()
		for i := range tr.Requests {
			tr.Requests[i].View = &sim.View{Text: "x", Headers: map[string]string{"x-session-id": "s1"}}
		}
		return tr
	}
	o := Options{Today: "prodstack-session", Replicas: 8, KVTokens: 16000, Thresholds: advise.DefaultThresholds()}
	_, err := Assess(context.Background(), Inputs{Trace: tr()}, o)
	if !usage.Is(err) || !strings.Contains(err.Error(), "--today prodstack-session (as shipped)") || !strings.Contains(err.Error(), "without a session key") {
		t.Errorf("shipped: %v", err)
	}
	for _, c := range []struct {
		key  string
		want float64
	}{{"x-session-id", 0.5}, {"x-user", 0}} {
		s := prodstack.Shipped()
		s.SessionKey = c.key
		files := &product.Files{Routers: []product.Configured{
			{Policy: "prodstack-roundrobin", Where: "other.yaml:1", Settings: prodstack.Shipped()},
			{Policy: "prodstack-session", Where: "values.yaml:7", Settings: s},
		}}
		rec, rk, err := assessRanked(context.Background(), Inputs{Trace: tr(), Files: files}, Options{Today: o.Today, Replicas: 8, KVTokens: 16000,
			Thresholds: o.Thresholds, Routers: []sim.PolicyInfo{{Name: "round-robin"}}}, true)
		if err != nil {
			t.Fatalf("%s: %v", c.key, err)
		}
		if rk == nil || rk.TodayHitRate != c.want || rk.TodayFrom != "values.yaml:7" {
			t.Errorf("%s: ranking's today %+v", c.key, rk)
		}
		found := false
		for _, e := range rec.Evidence {
			if strings.HasSuffix(e.ID, ".today") {
				found = true
				if !strings.Contains(e.Figure, fmt.Sprintf("hit %.1f%% after warm-up", 100*c.want)) {
					t.Errorf("%s: today's evidence %q, want %v", c.key, e.Figure, c.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no today evidence: %+v", c.key, rec.Evidence)
		}
	}
}
