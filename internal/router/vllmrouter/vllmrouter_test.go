package vllmrouter

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// TestConfigure: a launch command's --policy picks the emulation and its flags the settings;
// a policy the router does not take, and cache_aware (not emulated yet), give no row and say why.
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
	for policy, why := range map[string]string{"least_load": `--policy "least_load" is not one vLLM Router takes`, "cache_aware": "not emulated yet"} {
		f.Values = map[string]string{"--policy": policy}
		got = (Router{}).Configure(f)
		if len(got) != 1 || got[0].Policy != "" || !strings.Contains(got[0].NotSimulated, why) {
			t.Errorf("%s: %+v, want no row because %q", policy, got, why)
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
		r := sessionRequirement(product.TrafficOf(tr, 3, 1<<20, false))
		if r.Status != tt.status || !strings.Contains(r.Detail, tt.detail) {
			t.Errorf("requests %v: %s %q, want %s with %q", tt.reqs, r.Status, r.Detail, tt.status, tt.detail)
		}
	}
}
