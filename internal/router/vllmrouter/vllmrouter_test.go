package vllmrouter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// TestConfigure: a launch command's --policy picks the emulation and its flags the settings;
// a policy the router does not take gives no row and says why.
func TestConfigure(t *testing.T) {
	f := product.Facts{Product: ID, File: "router.yaml", Line: 12, Values: map[string]string{
		"--policy": "consistent_hash", "--worker-urls": "http://a:8000 http://b:8000", "--balance-abs-threshold": "many"}}
	got := (Router{}).Configure(f)
	if len(got) != 1 || got[0].Policy != "vllm-router-consistent-hash" || got[0].Where != "router.yaml:12" {
		t.Fatalf("configured %+v", got)
	}
	s := got[0].Settings.(Settings)
	if d := cmp.Diff([]string{"http://a:8000", "http://b:8000"}, s.WorkerURLs); d != "" || s.BalanceAbs != 64 {
		t.Errorf("worker urls (-want +got):\n%s; balance abs %d, want the shipped 64", d, s.BalanceAbs)
	}
	if len(got[0].Notes) != 1 || !strings.Contains(got[0].Notes[0], `--balance-abs-threshold "many"`) {
		t.Errorf("notes %q, want the unreadable value named", got[0].Notes)
	}
	f.Values = map[string]string{"--policy": "least_load"}
	got = (Router{}).Configure(f)
	if len(got) != 1 || got[0].Policy != "" || !strings.Contains(got[0].NotSimulated, `--policy "least_load" is not one vLLM Router takes`) {
		t.Errorf("least_load: %+v, want no row because the router does not take it", got)
	}
	// cache_aware is the default policy and reads its five flags (the Rust binary's
	// --eviction-interval, the Python launcher's --eviction-interval-secs).
	for _, vals := range []map[string]string{
		{"--cache-threshold": "0.5", "--balance-abs-threshold": "8", "--balance-rel-threshold": "2", "--eviction-interval": "30", "--max-tree-size": "1000"},
		{"--policy": "cache_aware", "--cache-threshold": "0.5", "--balance-abs-threshold": "8", "--balance-rel-threshold": "2", "--eviction-interval-secs": "30", "--max-tree-size": "1000"},
	} {
		f.Values = vals
		got = (Router{}).Configure(f)
		want := Settings{Policy: "cache_aware", CacheThreshold: 0.5, BalanceAbs: 8, BalanceRel: 2, EvictionSecs: 30, MaxTreeSize: 1000}
		if len(got) != 1 || got[0].Policy != "vllm-router-cache-aware" {
			t.Fatalf("%v: %+v, want the cache_aware row", vals, got)
		}
		if d := cmp.Diff(want, got[0].Settings.(Settings)); d != "" {
			t.Errorf("%v: settings (-want +got):\n%s", vals, d)
		}
	}
}

// TestSessionRequirement: a chat that names its session in neither a header of the list nor
// session_params.session_id leaves the requirement missing, with the count; a log where every
// chat names one meets it.
func TestSessionRequirement(t *testing.T) {
	named := chat(0, map[string]string{"x-correlation-id": "c1"}, "")
	params := chat(0.1, nil, "conv-1")
	bare := chat(0.2, map[string]string{"x-litellm-session-id": "abcdefgh"}, "")
	for _, tt := range []struct {
		reqs   []int
		status string
		detail string
	}{
		{[]int{0, 1}, product.Met, "every chat request"},
		{[]int{0, 1, 2}, product.Missing, "1 of 3 chat requests"},
	} {
		all := []sim.Request{named, params, bare}
		tr := simtest.TextTrace(simtest.Block)
		for _, i := range tt.reqs {
			tr.Requests = append(tr.Requests, all[i])
		}
		r := sessionRequirement(product.TrafficOf(tr, 3, 1<<20, false), true)
		if r.Status != tt.status || !strings.Contains(r.Detail, tt.detail) {
			t.Errorf("requests %v: %s %q, want %s with %q", tt.reqs, r.Status, r.Detail, tt.status, tt.detail)
		}
		// cache_aware reads no header: only the chat with session_params names its session.
		r = sessionRequirement(product.TrafficOf(tr, 3, 1<<20, false), false)
		if want := fmt.Sprintf("%d of %d chat requests", len(tt.reqs)-1, len(tt.reqs)); r.Status != product.Missing || !strings.Contains(r.Detail, want) || r.Name != ReqSessionParams {
			t.Errorf("requests %v, cache_aware: %s %s %q, want missing with %q", tt.reqs, r.Name, r.Status, r.Detail, want)
		}
	}
}
