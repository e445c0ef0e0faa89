package promql

import (
	"context"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// writeDumps writes two /metrics dumps to a temporary directory and returns their paths.
func writeDumps(t *testing.T, a, b string) []string {
	t.Helper()
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "before.prom"), filepath.Join(dir, "after.prom")
	for p, body := range map[string]string{pa: a, pb: b} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return []string{pa, pb}
}

// counterDump is one replica's prefix-cache counters as vLLM's prometheus_client writes them,
// each with its _created gauge (the Unix time the counter started, that is the process's
// start).
func counterDump(queries, hits, created string) string {
	return "# HELP vllm:prefix_cache_queries_total Prefix cache queries.\n# TYPE vllm:prefix_cache_queries_total counter\n" +
		"vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} " + queries + "\n" +
		"# HELP vllm:prefix_cache_queries_created Prefix cache queries.\n# TYPE vllm:prefix_cache_queries_created gauge\n" +
		"vllm:prefix_cache_queries_created{engine=\"0\",model_name=\"m\"} " + created + "\n" +
		"# HELP vllm:prefix_cache_hits_total Prefix cache hits.\n# TYPE vllm:prefix_cache_hits_total counter\n" +
		"vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} " + hits + "\n" +
		"# HELP vllm:prefix_cache_hits_created Prefix cache hits.\n# TYPE vllm:prefix_cache_hits_created gauge\n" +
		"vllm:prefix_cache_hits_created{engine=\"0\",model_name=\"m\"} " + created + "\n"
}

// TestRestartSeenByCreated: a replica restarts between two dumps and serves more after the
// restart than it had before, so no counter goes down. Its _created gauges moved, which says
// it restarted: the figures are then the new process's totals, 2700 hits of 3000 queries
// (90%), not the differences 2600/2000 (over 100%, shown clamped to 100%).
func TestRestartSeenByCreated(t *testing.T) {
	paths := writeDumps(t, counterDump("1000", "100", "1.764e+09"), counterDump("3000", "2700", "1.76400003e+09"))
	in, err := FromDumps(context.Background(), paths, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(in)
	if len(rep.Replicas) != 1 {
		t.Fatalf("%d replicas, want 1", len(rep.Replicas))
	}
	r := rep.Replicas[0]
	if r.Queries == nil || *r.Queries != 3000 || r.HitRate == nil || *r.HitRate != 0.9 {
		t.Errorf("queries %v, hit rate %v; want 3000 and 0.9 (the new process's totals)", deref(r.Queries), deref(r.HitRate))
	}
	var reset string
	for _, f := range rep.Findings {
		if f.Code == "counter-reset" {
			reset = f.Message
		}
	}
	if !strings.Contains(reset, "vllm:prefix_cache_queries_total, vllm:prefix_cache_hits_total") {
		t.Errorf("counter-reset finding %q, want both counters named", reset)
	}

	// The same process in both dumps: the differences.
	paths = writeDumps(t, counterDump("1000", "100", "1.764e+09"), counterDump("3000", "1100", "1.764e+09"))
	in, err = FromDumps(context.Background(), paths, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep = Analyze(in)
	if r := rep.Replicas[0]; *r.Queries != 2000 || *r.HitRate != 0.5 {
		t.Errorf("no restart: queries %v, hit rate %v; want 2000 and 0.5", deref(r.Queries), deref(r.HitRate))
	}
	if slices.ContainsFunc(rep.Findings, func(f findingT) bool { return f.Code == "counter-reset" || f.Code == "replica-gone" }) {
		t.Errorf("no restart, but a counter-reset or replica-gone finding: %+v", rep.Findings)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// replicasDump is prefix-cache counters of replicas named by instance, queries and hits each.
func replicasDump(reps map[string][2]int, gauges string) string {
	var q, h strings.Builder
	for _, name := range slices.Sorted(mapsKeys(reps)) {
		v := reps[name]
		q.WriteString("vllm:prefix_cache_queries_total{instance=\"" + name + "\",model_name=\"m\"} " + itoa(v[0]) + "\n")
		h.WriteString("vllm:prefix_cache_hits_total{instance=\"" + name + "\",model_name=\"m\"} " + itoa(v[1]) + "\n")
	}
	return "# TYPE vllm:prefix_cache_queries_total counter\n" + q.String() +
		"# TYPE vllm:prefix_cache_hits_total counter\n" + h.String() + gauges
}

// TestDumpsReplicaGoneAndNew: r3 is in the first dump only (scaled down or crashed between
// them), r4 in the second only (started between them; it has no earlier sample, so no rate).
// Neither may vanish in silence, and r4 exports the prefix-cache counters, so it is not "no
// prefix-cache metric found".
func TestDumpsReplicaGoneAndNew(t *testing.T) {
	for _, gauges := range []string{"", "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{instance=\"r4:8000\",model_name=\"m\"} 3\n"} {
		paths := writeDumps(t,
			replicasDump(map[string][2]int{"r1:8000": {1000, 500}, "r2:8000": {1000, 500}, "r3:8000": {1000, 500}}, ""),
			replicasDump(map[string][2]int{"r1:8000": {2000, 1000}, "r2:8000": {1000, 500}, "r4:8000": {3000, 2000}}, gauges))
		in, err := FromDumps(context.Background(), paths, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		rep := Analyze(in)
		var rows []string
		for _, r := range rep.Replicas {
			rows = append(rows, r.Replica)
		}
		if diff := cmp.Diff([]string{"r1:8000", "r2:8000", "r4:8000"}, rows); diff != "" {
			t.Fatalf("rows (-want +got):\n%s", diff)
		}
		codes := map[string][]string{}
		for _, f := range rep.Findings {
			codes[f.Subject] = append(codes[f.Subject], f.Code)
		}
		if !slices.Contains(codes["r3:8000"], "replica-gone") {
			t.Errorf("r3:8000 findings %v, want replica-gone", codes["r3:8000"])
		}
		if !slices.Contains(codes["r4:8000"], "replica-new") || slices.Contains(codes["r4:8000"], "no-prefix-metrics") {
			t.Errorf("r4:8000 findings %v, want replica-new and not no-prefix-metrics", codes["r4:8000"])
		}
		if r4 := rep.Replicas[2]; r4.HitRate != nil || r4.Generation != Current || r4.Model != "m" {
			t.Errorf("r4: hit rate %v, generation %q, model %q; want no rate, current names, model m", deref(r4.HitRate), r4.Generation, r4.Model)
		}
		if rep.Fleet.Replicas != 3 || *rep.Fleet.HitRate != 0.5 {
			t.Errorf("fleet: %d replicas, hit rate %v; want 3 and 0.5 (r1's 500/1000, r2 idle)", rep.Fleet.Replicas, deref(rep.Fleet.HitRate))
		}
	}
}

type findingT = finding.Finding

func mapsKeys[K comparable, V any](m map[K]V) iter.Seq[K] { return maps.Keys(m) }

func itoa(n int) string { return strconv.Itoa(n) }

// TestByLabelMissingOnSomeSeries: --by pod on a dump where two replicas' series carry no pod
// label, only their instance: they are two replicas (90% and 3.3%), not one row named after
// the dump with their sums (25%, hiding the cold one).
func TestByLabelMissingOnSomeSeries(t *testing.T) {
	dump := "# TYPE vllm:prefix_cache_queries_total counter\n" +
		"vllm:prefix_cache_queries_total{pod=\"p1\",instance=\"10.0.0.1:8000\",model_name=\"m\"} 1000\n" +
		"vllm:prefix_cache_queries_total{instance=\"10.0.0.2:8000\",model_name=\"m\"} 1000\n" +
		"vllm:prefix_cache_queries_total{instance=\"10.0.0.3:8000\",model_name=\"m\"} 3000\n" +
		"# TYPE vllm:prefix_cache_hits_total counter\n" +
		"vllm:prefix_cache_hits_total{pod=\"p1\",instance=\"10.0.0.1:8000\",model_name=\"m\"} 500\n" +
		"vllm:prefix_cache_hits_total{instance=\"10.0.0.2:8000\",model_name=\"m\"} 900\n" +
		"vllm:prefix_cache_hits_total{instance=\"10.0.0.3:8000\",model_name=\"m\"} 100\n"
	path := writeDumps(t, dump, dump)[0]
	in, err := FromDumps(context.Background(), []string{path}, 0, []string{"pod"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range Analyze(in).Replicas {
		got[r.Replica] = *r.HitRate
	}
	want := map[string]float64{"p1": 0.5, "10.0.0.2:8000": 0.9, "10.0.0.3:8000": 100.0 / 3000}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows by --by pod (-want +got):\n%s", diff)
	}
	// A --by label no series carries is an error, as with --prometheus, not one row per
	// replica that reads as if --by had worked (or, before, one row of the whole dump).
	if _, err := FromDumps(context.Background(), []string{path}, 0, []string{"namespace"}); err == nil || !strings.Contains(err.Error(), "--by namespace: no vLLM series carries these labels") {
		t.Errorf("--by namespace on a dump without it: %v", err)
	}
}

// TestPrometheusGroupsByReplicaLabels: the queries keep pod and instance whatever --by says,
// so series without the --by label are still told apart by replica (the client folds by --by).
func TestPrometheusGroupsByReplicaLabels(t *testing.T) {
	for _, q := range (Prometheus{By: []string{"namespace", "pod"}, Window: time.Minute}).Queries() {
		if q.name == "routers" || q.name == "stacks" {
			continue // the routers' series, not the engines'
		}
		if !strings.Contains(q.expr, "by (namespace, pod, instance, engine, model_name") {
			t.Errorf("query %s groups by other labels: %s", q.name, q.expr)
		}
	}
}
