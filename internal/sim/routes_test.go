package sim_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// TestSpoolRoutesAreTheReplays checks that the routes a RouteSpool writes to disk and reads back
// are the ones the replay made (SimulateRoutes keeps them in memory), for traces long enough to
// cross the spool's window many times, with requests that wait in queues while later ones
// finish (their records are written after the window has moved on), siblings (n = 3 on some
// requests, --n 2 on others) and an added replica; and that the run's routes hold the result's
// figures: each (request, sibling) once, every replica in range, cached tokens at most the
// prompt's less one, summing to the hit tokens.
func TestSpoolRoutesAreTheReplays(t *testing.T) {
	tr := simtest.RandomTraffic(5, 9000, 16)
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range tr.Requests {
		if rng.IntN(10) == 0 {
			tr.Requests[i].N = 3
		}
	}
	cases := []struct {
		name     string
		c        sim.Config
		policies []string
	}{
		// Three slots a replica and 0.3 s between arrivals: queues of hundreds build up.
		{"queues", simtest.ModelConfig(3, 2, -1), []string{"round-robin", "kv-longest", "kv-llmd"}},
		{"siblings and an added replica", func() sim.Config {
			c := simtest.ModelConfig(4, 3, 200)
			c.Siblings = 2
			return c
		}(), []string{"approx-prefix", "session", "chash-bounded"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spool, err := sim.NewRouteSpool(tr, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			defer spool.Close()
			for k, name := range tc.policies {
				info := policyInfo(t, name)
				want, wantRoutes, err := sim.SimulateRoutes(context.Background(), tr, tc.c, info)
				if err != nil {
					t.Fatal(err)
				}
				res, run, err := spool.Simulate(context.Background(), tr, tc.c, info, k)
				if err != nil {
					t.Fatal(err)
				}
				if res.HitTokens != want.HitTokens || res.TTFTP99 != want.TTFTP99 {
					t.Errorf("%s: the spooled replay differs: hit %d ttft p99 %v, want %d, %v", name, res.HitTokens, res.TTFTP99, want.HitTokens, want.TTFTP99)
				}
				var got []sim.Route
				if err := run.Each(func(r sim.Route) error { got = append(got, r); return nil }); err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(wantRoutes, got); d != "" {
					t.Fatalf("%s: routes read back (-replay +spool):\n%s", name, d)
				}
				if run.Policy != name || run.Replicas != tc.c.Replicas || run.KVBlocks != tc.c.KVBlocks {
					t.Errorf("run named %q %dx%d, want %q %dx%d", run.Policy, run.Replicas, run.KVBlocks, name, tc.c.Replicas, tc.c.KVBlocks)
				}
				checkRoutes(t, tr, tc.c, res, got)
			}
		})
	}
}

// checkRoutes checks routes against the trace and the replay's result.
func checkRoutes(t *testing.T, tr *sim.Trace, c sim.Config, res sim.Result, routes []sim.Route) {
	t.Helper()
	replicas := c.Replicas
	if c.AddReplicaAt >= 0 {
		replicas++
	}
	seen := map[[2]int]bool{}
	var cached int64
	for _, r := range routes {
		key := [2]int{r.Request, r.Sibling}
		p := tr.Requests[r.Request] // no source sorted these traces: place = index
		switch {
		case seen[key]:
			t.Fatalf("request %d sibling %d routed twice", r.Request, r.Sibling)
		case r.Sibling >= max(1, p.N, c.Siblings):
			t.Fatalf("request %d (n %d) has sibling %d", r.Request, p.N, r.Sibling)
		case r.Replica < 0 || r.Replica >= replicas:
			t.Fatalf("request %d went to replica %d of %d", r.Request, r.Replica, replicas)
		case r.PromptTokens != p.InputTokens:
			t.Fatalf("request %d: prompt %d tokens, want %d", r.Request, r.PromptTokens, p.InputTokens)
		case r.CachedTokens < 0 || r.CachedTokens > max(0, r.PromptTokens-1):
			t.Fatalf("request %d: %d cached of %d prompt tokens", r.Request, r.CachedTokens, r.PromptTokens)
		case r.Reason == "":
			t.Fatalf("request %d: no reason", r.Request)
		}
		seen[key] = true
		cached += int64(r.CachedTokens)
	}
	if len(routes) != sim.RequestsSent(tr, c) || len(routes) != res.Requests {
		t.Errorf("%d routes, want %d (result: %d)", len(routes), sim.RequestsSent(tr, c), res.Requests)
	}
	if cached != res.HitTokens {
		t.Errorf("routes' cached tokens sum to %d, the result's hit tokens are %d", cached, res.HitTokens)
	}
}

// policyInfo is the idealised policy named.
func policyInfo(t *testing.T, name string) sim.PolicyInfo {
	t.Helper()
	i := slices.IndexFunc(sim.Policies(), func(p sim.PolicyInfo) bool { return p.Name == name })
	if i < 0 {
		t.Fatalf("no policy %s", name)
	}
	return sim.Policies()[i]
}

// routeLog collects a sweep's runs.
type routeLog struct{ runs []string }

func (l *routeLog) WriteRun(r sim.RouteRun) error {
	n := 0
	err := r.Each(func(sim.Route) error { n++; return nil })
	l.runs = append(l.runs, fmt.Sprintf("%s %q %q %dx%d: %d routes", r.Policy, r.Variant, r.Label, r.Replicas, r.KVBlocks, n))
	return err
}

// TestSweepRoutesInResultOrder checks that a sweep hands its replays' routes over in the order
// of its results (KV size, replicas, then policy), whatever order its workers ran them in (the
// largest fleets first), with the baseline round-robin that runs unasked.
func TestSweepRoutesInResultOrder(t *testing.T) {
	tr := simtest.RandomTraffic(2, 300, 16)
	log := &routeLog{}
	s := sim.Sweep{Replicas: []int{4, 2}, KVBlocks: []int{64, 1024}, Policies: []string{"kv-llmd", "session"},
		Base: simtest.ModelConfig(1, 0, -1), Routes: log}
	res, err := sim.Run(context.Background(), tr, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range res {
		want = append(want, fmt.Sprintf("%s \"\" \"\" %dx%d: 300 routes", r.Policy, r.Replicas, r.KVBlocks))
	}
	if len(want) != 12 {
		t.Fatalf("%d results, want 12 (2 KV sizes x 2 fleets x 3 policies)", len(want))
	}
	if d := cmp.Diff(want, log.runs); d != "" {
		t.Errorf("runs (-results +routes):\n%s", d)
	}
}

// TestRoutesNameTheSourcesRequest checks that a route's request is the request's place in the
// source when the trace sorted it: a Mooncake trace whose records are out of time order (every
// third arrives 5 s late, records 0-99 with input_length 10+i telling them apart) is replayed in
// time order, and every route names the record it came from.
func TestRoutesNameTheSourcesRequest(t *testing.T) {
	var b strings.Builder
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 100 {
		at := 100 * i
		if i%3 == 0 {
			at += 5000
		}
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [%d, %d]}`+"\n", at, 10+i, rng.IntN(4), rng.IntN(3), i)
	}
	tr, err := sim.ReadMooncake(strings.NewReader(b.String()), "late.jsonl", 8)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tr.Notes, func(n string) bool { return strings.Contains(n, "sorted") }) {
		t.Fatalf("the trace was not sorted: %q", tr.Notes)
	}
	for k := range tr.Requests {
		if got := tr.Requests[k].InputTokens - 10; got != tr.Input(k) {
			t.Fatalf("request %d of the trace is record %d, Input says %d", k, got, tr.Input(k))
		}
	}
	_, routes, err := sim.SimulateRoutes(context.Background(), tr, simtest.ModelConfig(1, 2, -1), policyInfo(t, "round-robin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.PromptTokens != 10+r.Request {
			t.Fatalf("route of record %d has the prompt of record %d", r.Request, r.PromptTokens-10)
		}
	}
}
