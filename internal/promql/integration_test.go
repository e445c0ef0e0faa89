package promql

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/kvcheck/kvcheck/internal/fleet"
)

// promServer is a real Prometheus started for a test on a free loopback port.
type promServer struct {
	url string
	api promv1.API
}

// targetGroup is a static_configs entry: targets and the labels Prometheus adds to them.
type targetGroup struct {
	targets []string
	labels  map[string]string
}

// startPrometheus runs the Prometheus binary (Debian package prometheus, installed by
// scripts/install-deps.sh) scraping the targets every second, with a temporary data directory.
func startPrometheus(tb testing.TB, ctx context.Context, groups []targetGroup, client *http.Client) *promServer {
	tb.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		tb.Skip("no prometheus binary: run scripts/install-deps.sh (Debian package prometheus)")
	}
	dir := tb.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: vllm\n    static_configs:\n")
	for _, g := range groups {
		quoted := make([]string, len(g.targets))
		for i, t := range g.targets {
			quoted[i] = fmt.Sprintf("%q", t)
		}
		fmt.Fprintf(&cfg, "      - targets: [%s]\n", strings.Join(quoted, ", "))
		if len(g.labels) > 0 {
			cfg.WriteString("        labels:\n")
			for k, v := range g.labels {
				fmt.Fprintf(&cfg, "          %s: %q\n", k, v)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	addr := freeAddr(tb)
	cmd := exec.Command(bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start prometheus: %v", err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
	})
	u := "http://" + addr
	c, err := api.NewClient(api.Config{Address: u, Client: client})
	if err != nil {
		tb.Fatal(err)
	}
	ps := &promServer{url: u, api: promv1.NewAPI(c)}
	waitFor(tb, ctx, "prometheus ready at "+u, func() (bool, error) {
		resp, err := http.Get(u + "/-/ready")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return ps
}

// freeAddr picks a free loopback port. Prometheus binds it right after; a collision with
// another process in between would fail the start loudly, not silently.
func freeAddr(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(tb testing.TB, ctx context.Context, what string, cond func() (bool, error)) {
	tb.Helper()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			tb.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-t.C:
		}
	}
}

// values runs an instant query at time at and returns its values by instance.
func (ps *promServer) values(ctx context.Context, q string, at time.Time) (map[string]float64, error) {
	v, _, _, err := ps.api.Query(ctx, q, at)
	if err != nil {
		return nil, err
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %s: got %s, want a vector", q, v.Type())
	}
	out := map[string]float64{}
	for _, s := range vec {
		out[string(s.Metric["instance"])] = float64(s.Value)
	}
	return out, nil
}

// waitQueries waits until Prometheus's latest sample of every replica's query counter equals
// want (by instance), and returns the evaluation time at which it did. Queries evaluated at
// that time see exactly those samples: a later scrape that times out under load writes
// staleness markers, and a query at "now" would then miss that target's gauges.
func (ps *promServer) waitQueries(tb testing.TB, ctx context.Context, want map[string]float64) time.Time {
	tb.Helper()
	var at time.Time
	waitFor(tb, ctx, fmt.Sprintf("prometheus to hold the query counters %v", want), func() (bool, error) {
		at = time.Now()
		got, err := ps.values(ctx, `sum by (instance) (vllm:prefix_cache_queries_total or vllm:gpu_prefix_cache_queries_total)`, at)
		if err != nil {
			return false, err
		}
		for k, v := range want {
			if got[k] != v {
				return false, nil
			}
		}
		return true, nil
	})
	return at
}

func queriesByAddr(f *fleet.Fleet) map[string]float64 {
	out := map[string]float64{}
	for _, r := range f.Replicas() {
		out[r.Addr()] = r.Totals().Queries
	}
	return out
}

// TestPrometheusMatchesScrape runs a real Prometheus against an emulated fleet and checks that
// --prometheus and --scrape report the same per-replica numbers. The workload is stepped by
// the test, so every sample Prometheus holds is either state A or state B: the ratios of
// counter increases (hit rate, preemptions per request) are then exactly equal in both sources,
// and gauges equal state B. Per-second rates differ by design (each source divides by its own
// interval), so they are only checked for presence.
func TestPrometheusMatchesScrape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cold := fleet.DefaultWorkload
	cold.SharedFraction = 0.1
	cfgs := fleet.Uniform(4, fleet.Config{Seed: 3, WarmupSteps: 2000, Engines: 2})
	cfgs[1].Version = "0.9.1" // old names only
	cfgs[2].Workload = cold
	busy := fleet.DefaultWorkload
	busy.ArrivalsPerStep = 1
	cfgs[3].KVBlocks = 200 // small cache under load: preemptions
	cfgs[3].Workload = busy
	f, err := fleet.New(fleet.Options{Replicas: cfgs})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeFleet(t, f) })
	var addrs []string
	var targets []Target
	for _, r := range f.Replicas() {
		addrs = append(addrs, r.Addr())
		tg, err := ParseTarget(r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	// Prometheus scrapes replica 0 through a proxy that the test can make fail, as a scrape
	// that times out under load does; the instance label keeps the replica's own address.
	var failing atomic.Bool
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addrs[0]})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "failing on purpose", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	ps := startPrometheus(t, ctx, []targetGroup{
		{targets: []string{strings.TrimPrefix(proxy.URL, "http://")}, labels: map[string]string{"instance": addrs[0]}},
		{targets: addrs[1:]},
	}, nil)

	// State A: Prometheus has it, then the scrape source reads it.
	ps.waitQueries(t, ctx, queriesByAddr(f))
	sc := Scraper{Timeout: 5 * time.Second}
	a, down := sc.Round(ctx, targets, true)
	if len(down) > 0 {
		t.Fatalf("scrape A: %v", down)
	}
	f.Step(500)
	b, down := sc.Round(ctx, targets, false)
	if len(down) > 0 {
		t.Fatalf("scrape B: %v", down)
	}
	at := ps.waitQueries(t, ctx, queriesByAddr(f))
	// A failed scrape after that writes staleness markers for replica 0: its gauges vanish
	// from queries at "now", not from queries at the time state B was confirmed.
	failing.Store(true)
	waitFor(t, ctx, "prometheus to record a failed scrape of "+addrs[0], func() (bool, error) {
		up, err := ps.values(ctx, `up`, time.Now())
		if err != nil {
			return false, err
		}
		v, ok := up[addrs[0]]
		return ok && v == 0, nil
	})

	scraped := Analyze(Compare(targets, a, b, nil, nil))
	pin, err := Prometheus{API: ps.api, URL: ps.url, Window: 10 * time.Minute, Timeout: 10 * time.Second, Time: at}.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// hitrate's own client, which decodes the answers as it reads them, reads the same.
	stream, err := Conn{URL: ps.url}.Querier()
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := Prometheus{API: stream, URL: ps.url, Window: 10 * time.Minute, Timeout: 10 * time.Second, Time: at}.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pin.Observations, streamed.Observations); diff != "" {
		t.Errorf("observations through client_golang (-) and the streaming client (+):\n%s", diff)
	}
	queried := Analyze(pin)

	type row struct {
		Replica, Model            string
		HitRate, PreemptionsPer1k *float64
		KVUsage, Running, Waiting *float64
		BlockSize, NumGPUBlocks   *int
		PrefixCaching             *bool
		Generation                Generation
	}
	rows := func(rep Report) []row {
		var out []row
		for _, r := range rep.Replicas {
			if r.QueriesPerSec == nil || *r.QueriesPerSec <= 0 {
				t.Errorf("%s: replica %s has no query rate", rep.Source, r.Replica)
			}
			out = append(out, row{r.Replica, r.Model, r.HitRate, r.PreemptionsPer1k, r.KVUsage, r.Running, r.Waiting, r.BlockSize, r.NumGPUBlocks, r.PrefixCaching, r.Generation})
		}
		return out
	}
	got, want := rows(queried), rows(scraped)
	if len(want) != 4 {
		t.Fatalf("scrape gave %d replicas, want 4", len(want))
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(x)) })); diff != "" {
		t.Errorf("per-replica numbers, --scrape (-) vs --prometheus (+):\n%s", diff)
	}
	// The fleet's shape shows through both sources.
	byName := map[string]row{}
	for _, r := range want {
		byName[r.Replica] = r
	}
	if g := byName[addrs[1]].Generation; g != Deprecated {
		t.Errorf("replica on 0.9.1: generation %q, want deprecated", g)
	}
	if n := byName[addrs[3]].NumGPUBlocks; n == nil || *n == 0 {
		t.Errorf("num_gpu_blocks of %s = %v, want the fleet's", addrs[3], n)
	}
	if p := byName[addrs[3]].PreemptionsPer1k; p == nil || *p == 0 {
		t.Errorf("small-cache replica: preemptions per 1k = %v, want > 0", p)
	}
	// Prometheus has no /version: the catalog dates the old replica by the names it exports,
	// which puts it before the hit-counting fix of vLLM 0.11.
	for _, r := range queried.Replicas {
		if r.Replica == addrs[1] && r.VersionRange != ">=0.7.3 <0.11.0" {
			t.Errorf("replica on 0.9.1 via Prometheus: version range %q, want >=0.7.3 <0.11.0", r.VersionRange)
		}
	}
	if len(pin.Queries) != 6 {
		t.Errorf("%d Prometheus queries, want 6", len(pin.Queries))
	}
	// At the time state B was confirmed every replica was up: none is gone.
	for _, x := range queried.Findings {
		if x.Code == "replica-gone" || x.Code == "replica-new" {
			t.Errorf("every replica up: %s %s: %s", x.Code, x.Subject, x.Message)
		}
	}
	// Now replica 0's scrape fails: Prometheus marked its series stale, so the window still
	// holds its counters but their end does not. It keeps its row, and is said to be gone.
	now, err := Prometheus{API: ps.api, URL: ps.url, Window: 10 * time.Minute, Timeout: 10 * time.Second}.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, x := range Analyze(now).Findings {
		if x.Code == "replica-gone" {
			gone = append(gone, x.Subject)
		}
	}
	if diff := cmp.Diff([]string{addrs[0]}, gone); diff != "" {
		t.Errorf("replica-gone after replica 0's scrape failed (-want +got):\n%s", diff)
	}
	if len(now.Observations) != 4 {
		t.Errorf("%d rows after replica 0's scrape failed, want 4 (its row covers the time it was up)", len(now.Observations))
	}
}
