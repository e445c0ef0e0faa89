package sim_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/router/ray"
	"github.com/kvcheck/kvcheck/internal/router/sglang"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// TestViewTextFile: a log whose texts pass MemViewBytes keeps them in a temporary file, and
// every router that reads text routes exactly as on the same log held in memory. The log is
// 240 chats of 6 tenants (each a system prompt of its own, two with characters of two and three
// bytes), each tenant's users continuing their conversation, so texts share long prefixes and
// the trees split and evict (SGLang's hint defaults: a 10,000-character tree, evicted every 30
// s; Ray evicting past 5,000 characters of a replica): the routes and hits must be the same,
// request by request.
func TestViewTextFile(t *testing.T) {
	var lines []string
	for i := range 240 {
		tenant := i % 6
		system := fmt.Sprintf("tenant %d: ", tenant) + strings.Repeat([]string{"abc ", "déf ", "ghi ", "€uro ", "jkl ", "mno "}[tenant], 60+20*tenant)
		turns := ""
		for k := range i / 6 % 5 {
			turns += fmt.Sprintf(`,{"role":"assistant","content":"answer %d of user %d"},{"role":"user","content":"follow-up %d"}`, k, i%18, k)
		}
		lines = append(lines, fmt.Sprintf(`{"timestamp":%d,"messages":[{"role":"system","content":%q},{"role":"user","content":"question of user %d"}%s],"max_tokens":50}`,
			1764496800+i/2, system, i%18, turns))
	}
	log := strings.Join(lines, "\n")
	read := func(o sim.RequestLogOptions) *sim.Trace {
		t.Helper()
		tr, err := sim.ReadRequests(context.Background(), strings.NewReader(log), "texts.jsonl", o)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	mem, spilled := read(sim.RequestLogOptions{}), read(sim.SpillTexts(sim.RequestLogOptions{}, 1))
	var buf []byte
	for i, r := range spilled.Requests {
		if r.View == nil || r.View.Stored == nil || r.View.Text != "" {
			t.Fatalf("request %d: view %+v, want its text moved to the file", i, r.View)
		}
		var into sim.View
		v, err := r.View.WithText(&into, &buf)
		if err != nil {
			t.Fatal(err)
		}
		if want := mem.Requests[i].View; v.Text != want.Text || !slices.Equal(v.Pieces, want.Pieces) {
			t.Fatalf("request %d read back %q, want %q", i, v.Text, want.Text)
		}
	}
	for _, r := range mem.Requests {
		if r.View.Stored != nil {
			t.Fatal("a log under MemViewBytes moved its texts out of memory")
		}
	}
	c := sim.Config{Replicas: 3, KVBlocks: 2000, AddReplicaAt: -1, Seed: 1,
		Model: sim.Model{PrefillPerToken: 1e-4, DecodePerToken: 0.02, MaxRunning: 8}, Params: sim.DefaultParams()}
	rayEvicting := ray.Shipped()
	rayEvicting.DoEviction, rayEvicting.EvictionThresholdChars, rayEvicting.EvictionTargetChars = true, 5000, 4000
	for _, tc := range []struct {
		policy string
		r      product.Router
		s      product.Settings
	}{
		{"sglang-cache-aware", sglang.Router{}, sglang.CLIDefaults()},
		{"sglang-cache-aware", sglang.Router{}, sglang.HintDefaults()},
		{"ray-prefix-affinity", ray.Router{}, ray.Shipped()},
		{"ray-prefix-affinity", ray.Router{}, rayEvicting},
		{"prodstack-prefixaware", prodstack.Router{}, prodstack.Shipped()},
	} {
		info := emulation(t, tc.r, tc.s, tc.policy)
		want, got := simtest.Routes(t, mem, c, info), simtest.Routes(t, spilled, c, info)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: texts from the file route otherwise than in memory (-memory +file):\n%s", tc.policy, d)
		}
		if len(slices.Compact(slices.Clone(want.Routes))) < 2 {
			t.Errorf("%s: every request went to one replica; the log does not exercise the router", tc.policy)
		}
	}
}

// emulation is r's emulation named, with settings s.
func emulation(t *testing.T, r product.Router, s product.Settings, name string) sim.PolicyInfo {
	t.Helper()
	for _, e := range r.Emulations(s) {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no emulation %s", name)
	return sim.PolicyInfo{}
}
