package promql

import (
	"strings"
	"testing"
)

// TestHitsAboveQueries: vLLM counts hits among the tokens it looked up, so a replica's hits
// cannot exceed its queries. 1500 hits of 1000 queries is no 100% hit rate (what clamping
// showed) but counters that do not describe the same lookups: its hit rate is left out, also
// of the fleet's (100 of 200 from the other replica: 50%), and a bad-value finding says why. A
// hair above (Prometheus's extrapolation of two series) is still read, as 100%.
func TestHitsAboveQueries(t *testing.T) {
	obs := []Observation{
		{Replica: "a", Queries: f(1000), Hits: f(1500), QueriesName: "vllm:prefix_cache_queries_total", HitsName: "vllm:prefix_cache_hits_total", Generation: Current},
		{Replica: "b", Queries: f(200), Hits: f(100), Generation: Current},
		{Replica: "c", Queries: f(1000), Hits: f(1004), Generation: Current},
	}
	rep := Analyze(Input{Mode: ModeLifetime, Observations: obs})
	if r := rep.Replicas[0]; r.HitRate != nil {
		t.Errorf("a: hit rate %v, want none", *r.HitRate)
	}
	if r := rep.Replicas[2]; r.HitRate == nil || *r.HitRate != 1 {
		t.Errorf("c: hit rate %v, want 1 (a hair above, clamped)", r.HitRate)
	}
	if got, want := *rep.Fleet.HitRate, (100.0+1004)/(200+1000); got != want {
		t.Errorf("fleet hit rate %v, want %v (b and c; a left out)", got, want)
	}
	var msg string
	for _, x := range rep.Findings {
		if x.Code == "bad-value" && x.Subject == "a" {
			msg = x.Message
		}
	}
	if !strings.Contains(msg, "1500") || !strings.Contains(msg, "1000") || !strings.Contains(msg, "vllm:prefix_cache_hits_total") {
		t.Errorf("a: bad-value %q, want both counters and their values named", msg)
	}
}

// TestNoQueriesWording: one dump has no window; a replica that never looked anything up has
// done so since it started, which the finding says rather than "in the window".
func TestNoQueriesWording(t *testing.T) {
	for _, tt := range []struct {
		mode Mode
		want string
	}{{ModeLifetime, "since it started"}, {ModeRate, "in the window"}} {
		rep := Analyze(Input{Mode: tt.mode, Window: 60, Observations: []Observation{{Replica: "a", Queries: f(0), Hits: f(0), Window: 60, Generation: Current}}})
		var msg string
		for _, x := range rep.Findings {
			if x.Code == "no-queries" {
				msg = x.Message
			}
		}
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s: no-queries %q, want %q", tt.mode, msg, tt.want)
		}
	}
}

// TestCounterResetWording: two readings give a restarted replica's figures since its restart
// (its new totals); Prometheus's rate() adds the counts before the reset to those after, so
// its figures cover the whole window, which the finding must not deny.
func TestCounterResetWording(t *testing.T) {
	for _, tt := range []struct {
		src        Source
		want, lack string
	}{
		{SourceFile, "cover only the time since", "whole window"},
		{SourcePrometheus, "cover the whole window", "only the time since"},
	} {
		o := Observation{Replica: "a", Queries: f(100), Hits: f(50), Window: 60, Generation: Current, Resets: []string{"vllm:prefix_cache_queries_total"}}
		rep := Analyze(Input{Source: tt.src, Mode: ModeRate, Window: 60, Observations: []Observation{o}})
		var msg string
		for _, x := range rep.Findings {
			if x.Code == "counter-reset" {
				msg = x.Message
			}
		}
		if !strings.Contains(msg, tt.want) || strings.Contains(msg, tt.lack) {
			t.Errorf("%s: counter-reset %q, want %q and not %q", tt.src, msg, tt.want, tt.lack)
		}
	}
}
