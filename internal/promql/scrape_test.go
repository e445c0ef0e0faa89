package promql

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/fleet"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in   string
		want Target
		err  bool
	}{
		{"10.0.0.7:8000", Target{URL: "http://10.0.0.7:8000/metrics", Name: "10.0.0.7:8000"}, false},
		{"https://vllm.example:443", Target{URL: "https://vllm.example:443/metrics", Name: "vllm.example:443"}, false},
		{"http://h:1/custom/metrics", Target{URL: "http://h:1/custom/metrics", Name: "h:1"}, false},
		{"pod-a=10.0.0.7:8000", Target{URL: "http://10.0.0.7:8000/metrics", Name: "pod-a"}, false},
		{"ftp://h:1", Target{}, true},
		{"", Target{}, true},
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("ParseTarget(%q) error = %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseTarget(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// TestTargets checks that targets behind one host:port stay apart, and that a URL given twice
// is scraped once.
func TestTargets(t *testing.T) {
	const proxy = "127.0.0.1:8001/api/v1/namespaces/prod/pods/"
	tests := []struct {
		name string
		in   []string
		want []Target
		err  string
	}{
		{"same URL twice", []string{"10.0.0.7:8000", "http://10.0.0.7:8000/metrics"},
			[]Target{{URL: "http://10.0.0.7:8000/metrics", Name: "10.0.0.7:8000"}}, ""},
		{"one proxy, two pods", []string{proxy + "a:8000/proxy/metrics", proxy + "b:8000/proxy/metrics", "10.0.0.9:8000"},
			[]Target{
				{URL: "http://" + proxy + "a:8000/proxy/metrics", Name: proxy + "a:8000/proxy"},
				{URL: "http://" + proxy + "b:8000/proxy/metrics", Name: proxy + "b:8000/proxy"},
				{URL: "http://10.0.0.9:8000/metrics", Name: "10.0.0.9:8000"},
			}, ""},
		{"one name, two URLs", []string{"a=10.0.0.7:8000", "a=10.0.0.8:8000"}, nil, `target name "a" given to more than one URL`},
		{"bad", []string{"ftp://h:1"}, nil, "give host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Targets(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScrapeFleet scrapes an emulated fleet with the real HTTP client: rates come from the
// counters' deltas and match the emulator's own totals.
func TestScrapeFleet(t *testing.T) {
	f, err := fleet.New(fleet.Options{Replicas: fleet.Uniform(3, fleet.Config{WarmupSteps: 300})})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeFleet(t, f) })
	var targets []Target
	for _, r := range f.Replicas() {
		tg, _ := ParseTarget(r.Name() + "=" + r.URL())
		targets = append(targets, tg)
	}
	before := map[string]fleet.Totals{}
	for _, r := range f.Replicas() {
		before[r.Name()] = r.Totals()
	}
	sc := Scraper{Timeout: 5 * time.Second}
	ctx := context.Background()
	a, down := sc.Round(ctx, targets, true)
	f.Step(200)
	b, down2 := sc.Round(ctx, targets, false)
	if len(down)+len(down2) > 0 {
		t.Fatalf("down: %v %v", down, down2)
	}
	rep := Analyze(Compare(targets, a, b, nil, nil))
	for i, r := range rep.Replicas {
		fr := f.Replicas()[i]
		t0, t1 := before[fr.Name()], fr.Totals()
		want := (t1.Hits - t0.Hits) / (t1.Queries - t0.Queries)
		if r.Replica != fr.Name() || r.HitRate == nil || *r.HitRate != want {
			t.Errorf("replica %s: hit rate %v, want %s at %v", r.Replica, r.HitRate, fr.Name(), want)
		}
		if r.Version != fleet.CurrentVersion || r.VersionFrom != "server" {
			t.Errorf("replica %s: version %q from %q, want %s from the server's /version", r.Replica, r.Version, r.VersionFrom, fleet.CurrentVersion)
		}
	}
}

// TestScrapeBadTargets: targets that are down, refuse auth, or serve something else are
// reported by name; the others still give figures.
func TestScrapeBadTargets(t *testing.T) {
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, `vllm:prefix_cache_queries_total{engine="0",model_name="m"} 10`)
	}))
	defer good.Close()
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no token", http.StatusUnauthorized)
	}))
	defer auth.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "<html>hello</html>")
	}))
	defer html.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	var targets []Target
	for _, u := range []string{"good=" + good.URL, "auth=" + auth.URL, "html=" + html.URL, "closed=" + closedURL} {
		tg, err := ParseTarget(u)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	dumps, down := Scraper{Timeout: 5 * time.Second}.Round(context.Background(), targets, false)
	if _, ok := dumps["good"]; !ok || len(dumps) != 1 {
		t.Errorf("answered: %v, want only good", dumps)
	}
	want := map[string]string{"auth": "check --bearer-token-file", "html": "line 1", "closed": "connection refused"}
	for _, d := range down {
		if !strings.Contains(d.Error, want[d.Target]) {
			t.Errorf("target %s: error %q, want it to contain %q", d.Target, d.Error, want[d.Target])
		}
		delete(want, d.Target)
	}
	if len(want) > 0 {
		t.Errorf("not reported down: %v", want)
	}
}

// TestScrapeReset serves a counter that goes backwards between the two scrapes (a restart).
func TestScrapeReset(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		q, h := 1000, 500
		if n.Add(1) > 1 {
			q, h = 40, 10
		}
		fmt.Fprintf(w, "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} %d\nvllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} %d\n", q, h)
	}))
	defer srv.Close()
	tg, _ := ParseTarget(srv.URL)
	in, err := Scraper{Timeout: 5 * time.Second}.Collect(context.Background(), []Target{tg}, time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(in)
	if r := rep.Replicas[0]; r.HitRate == nil || *r.HitRate != 0.25 {
		t.Errorf("hit rate after a reset = %v, want 10/40", r.HitRate)
	}
	found := false
	for _, x := range rep.Findings {
		found = found || x.Code == "counter-reset"
	}
	if !found {
		t.Errorf("findings %+v lack counter-reset", rep.Findings)
	}
}

func TestScrapeAllDown(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	tg, _ := ParseTarget(closed.URL)
	closed.Close()
	_, err := Scraper{Timeout: time.Second}.Collect(context.Background(), []Target{tg}, time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "no target answered") {
		t.Errorf("error = %v, want no target answered", err)
	}
}

// closeFleet stops a test fleet and fails the test when a server does not close.
func closeFleet(t testing.TB, f *fleet.Fleet) {
	t.Helper()
	if err := f.Close(); err != nil {
		t.Error(err)
	}
}

// bigExposition writes an exposition of about size bytes: a few vllm: series among a large
// number of other series, as a node or federation exporter behind the same port would serve.
func bigExposition(w io.Writer, size int) {
	bw := bufio.NewWriterSize(w, 64<<10)
	defer func() { _ = bw.Flush() }()
	fmt.Fprint(bw, "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 100\n")
	fmt.Fprint(bw, "# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 60\n")
	fmt.Fprint(bw, "# TYPE node_thing gauge\n")
	for n, i := 0, 0; n < size; i++ {
		k, _ := fmt.Fprintf(bw, "node_thing{device=\"dev%d\",mode=\"some-long-label-value\"} %d\n", i, i)
		n += k
	}
}

// TestScrapeMemoryBounded: the exposition is read as a stream, keeping vllm: series only and
// parsing a block at a time, so what a round of scrapes holds does not grow with the size of
// the answers. Eight targets each answer 8 MiB of mostly other series at once; the whole-text
// parser held each answer's parsed form, about 100 MB a target (the figure grew with the
// number of targets); the streaming reader stays within a few MiB.
func TestScrapeMemoryBounded(t *testing.T) {
	const targets, size = 8, 8 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bigExposition(w, size)
	}))
	defer srv.Close()
	var ts []Target
	for i := range targets {
		ts = append(ts, Target{URL: fmt.Sprintf("%s/r%d/metrics", srv.URL, i), Name: fmt.Sprint(i)})
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	dumps, down := Scraper{Timeout: time.Minute}.Round(context.Background(), ts, false)
	close(stop)
	<-sampled
	if len(dumps) != targets || len(down) != 0 {
		t.Fatalf("%d answered, down %+v; want all %d", len(dumps), down, targets)
	}
	if n := len(dumps["0"].Samples); n != 2 {
		t.Errorf("kept %d samples, want the 2 vllm: ones", n)
	}
	// The garbage collector lets the heap reach twice what is live before collecting: the
	// bound allows for that on top of the buffers of eight readers.
	if grew := int64(peak.Load()) - int64(base.HeapAlloc); grew > 64<<20 {
		t.Errorf("heap grew by %d MiB during the round, want at most 64 MiB", grew>>20)
	}
}

// TestParseExpositionLongFamily: a family longer than a parse block is cut between blocks with
// its # TYPE line repeated, so every series keeps its type and none is lost; a line number in
// an error counts from the start of the input, not of the block.
func TestParseExpositionLongFamily(t *testing.T) {
	var b strings.Builder
	b.WriteString("# HELP vllm:prefix_cache_hits_total Hits.\n# TYPE vllm:prefix_cache_hits_total counter\n")
	const n = 20000 // about 1.4 MB: several blocks
	for i := range n {
		fmt.Fprintf(&b, "vllm:prefix_cache_hits_total{engine=\"%d\",model_name=\"m\"} %d\n", i, i)
	}
	d, err := ParseExposition(strings.NewReader(b.String()), "src")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Samples) != n || d.Samples[n-1].Value != n-1 || d.Samples[n-1].Labels["engine"] != fmt.Sprint(n-1) {
		t.Fatalf("got %d samples (last %+v), want %d in order", len(d.Samples), d.Samples[len(d.Samples)-1], n)
	}
	b.WriteString("vllm:prefix_cache_hits_total{engine=\"x\"} notanumber\n")
	_, err = ParseExposition(strings.NewReader(b.String()), "src")
	if want := fmt.Sprintf("src: line %d:", n+3); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want it to name %q", err, want)
	}
}

// TestParseExpositionLimits: a line over the line limit and more series than a scrape keeps
// are errors naming the limit, not memory.
func TestParseExpositionLimits(t *testing.T) {
	long := "vllm:x{a=\"" + strings.Repeat("y", maxExpositionLine) + "\"} 1\n"
	if _, err := ParseExposition(strings.NewReader(long), "src"); err == nil || !strings.Contains(err.Error(), "line 1 is longer than 1024 KiB") {
		t.Errorf("long line: %v", err)
	}
	var b strings.Builder
	for i := range MaxScrapeSeries + 1 {
		fmt.Fprintf(&b, "vllm:num_requests_running{engine=\"%d\"} 1\n", i)
	}
	if _, err := parseExposition(strings.NewReader(b.String()), "src", MaxScrapeSeries); err == nil || !strings.Contains(err.Error(), "more than 65536 vllm: series") {
		t.Errorf("too many series: %v", err)
	}
}

// TestScrapeSameSamplesTwice: a target that serves the same samples at both scrapes, sample
// timestamps unchanged (a federation endpoint or an exporter's cache that did not refresh in
// the window), measured nothing: its counters did not move because its data is old, not
// because the replicas were idle. It is reported down with why, not shown as idle replicas
// ("no prefix-cache lookups in the window").
func TestScrapeSameSamplesTwice(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "vllm:prefix_cache_queries_total{instance=\"r1:8000\",model_name=\"m\"} 1000 1764496800000\n"+
			"vllm:prefix_cache_hits_total{instance=\"r1:8000\",model_name=\"m\"} 500 1764496800000\n")
	}))
	defer srv.Close()
	tg, _ := ParseTarget(srv.URL)
	in, err := Scraper{Timeout: 5 * time.Second}.Collect(context.Background(), []Target{tg}, time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(in)
	if len(rep.Replicas) != 0 || len(rep.Down) != 1 || !strings.Contains(rep.Down[0].Error, "same samples") {
		t.Errorf("replicas %+v, down %+v; want none, and the target down for serving the same samples", rep.Replicas, rep.Down)
	}
	for _, x := range rep.Findings {
		if x.Code == "no-queries" {
			t.Errorf("stale samples read as an idle replica: %s", x.Message)
		}
	}
}
