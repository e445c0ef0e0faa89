package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/cli"
	"github.com/kvcheck/kvcheck/internal/fleet"
)

// switchable is a target in front of emulated replicas that a test takes down, brings up or
// points at another replica (a restart: the new one's counters start lower).
type switchable struct {
	up      atomic.Bool
	mu      sync.Mutex
	backend *url.URL
}

func (s *switchable) point(t *testing.T, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.backend = u
	s.mu.Unlock()
}

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.up.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	s.mu.Lock()
	b := s.backend
	s.mu.Unlock()
	httputil.NewSingleHostReverseProxy(b).ServeHTTP(w, r)
}

// watchLine is what the test reads of each refresh.
type watchLine struct {
	Refresh  int `json:"refresh"`
	Replicas []struct {
		Replica string   `json:"replica"`
		HitRate *float64 `json:"hit_rate"`
	} `json:"replicas"`
	Down []struct {
		Target string `json:"target"`
	} `json:"down"`
	Changes []struct {
		Replica      string   `json:"replica"`
		State        string   `json:"state"`
		HitRateDelta *float64 `json:"hit_rate_delta"`
	} `json:"changes"`
	IntervalSeconds float64 `json:"interval_seconds"`
}

func (l watchLine) state(replica string) string {
	for _, c := range l.Changes {
		if c.Replica == replica {
			return c.State
		}
	}
	return "absent"
}

// TestHitrateWatch watches three targets of an emulated fleet, piped, so one JSON object per
// refresh: target b starts down, comes up (new), target c is switched to a fresh replica
// (restarted: its counters go back), b goes down again (gone); cancelling the context, as
// Ctrl-C does through main's signal context, ends the watch with exit 0. Each step waits for
// the refresh that shows the previous one, never for a fixed time.
// (The test cancels the context with main's SIGINT cause rather than signalling the process.)
func TestHitrateWatch(t *testing.T) {
	f := startFleet(t, fleet.Options{Replicas: fleet.Uniform(3, fleet.Config{WarmupSteps: 200}), Tick: time.Millisecond})
	fresh := startFleet(t, fleet.Options{Replicas: fleet.Uniform(1, fleet.Config{Seed: 99})})
	var a, b, c switchable
	for i, s := range []*switchable{&a, &b, &c} {
		s.point(t, f.URLs()[i])
	}
	a.up.Store(true)
	c.up.Store(true)
	var targets []string
	for name, s := range map[string]*switchable{"a": &a, "b": &b, "c": &c} {
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		targets = append(targets, name+"="+srv.URL)
	}
	base, cancelBase := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelBase()
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	ctrlC := func() { cancel(cli.Interrupted{Sig: syscall.SIGINT}) } // as main's context does at Ctrl-C
	pr, pw := io.Pipe()
	var errOut bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"hitrate", "--scrape", strings.Join(targets, ","), "--watch", "50ms"}, streams{In: strings.NewReader(""), Out: pw, ErrOut: &errOut}, nil)
		_ = pw.Close()
	}()

	steps := []struct {
		what string
		done func(watchLine) bool
		then func()
	}{
		{"a and c shown, b down", func(l watchLine) bool {
			return l.state("a") != "absent" && l.state("c") != "absent" && len(l.Down) == 1 && strings.HasPrefix(l.Down[0].Target, "b")
		}, func() { b.up.Store(true) }},
		{"b new", func(l watchLine) bool { return l.state("b") == "new" }, func() { c.point(t, fresh.URLs()[0]) }},
		{"c restarted", func(l watchLine) bool { return l.state("c") == "restarted" }, func() { b.up.Store(false) }},
		{"b gone", func(l watchLine) bool { return l.state("b") == "gone" }, ctrlC},
	}
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	step, lastRefresh, deltas := 0, 0, false
	for sc.Scan() {
		var l watchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("refresh is not one JSON object per line: %v: %q", err, sc.Text())
		}
		if l.Refresh != lastRefresh+1 || l.IntervalSeconds != 0.05 {
			t.Errorf("refresh %d after %d, interval %v; want consecutive refreshes every 0.05s", l.Refresh, lastRefresh, l.IntervalSeconds)
		}
		lastRefresh = l.Refresh
		for _, ch := range l.Changes {
			deltas = deltas || ch.HitRateDelta != nil
		}
		if step < len(steps) && steps[step].done(l) {
			steps[step].then()
			step++
		}
	}
	if step < len(steps) {
		t.Fatalf("the watch ended before %q (stderr %q)", steps[step].what, errOut.String())
	}
	// Ctrl-C is a watch's normal end: exit 0, and no "partial" note.
	if got := <-code; got != exitOK || strings.Contains(errOut.String(), "partial") {
		t.Errorf("exit %d after Ctrl-C, stderr %q; want 0 and no partial note", got, errOut.String())
	}
	if !deltas {
		t.Error("no refresh carried a hit-rate delta for a replica seen twice")
	}
}

// TestHitrateWatchUsage: --watch needs a live source and a positive interval, and takes the
// interval as its value or the next argument.
func TestHitrateWatchUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"hitrate", "--file", "x.prom", "--watch"}, "--watch needs one live source"},
		{[]string{"hitrate", "--scrape", "127.0.0.1:1", "--watch", "soon"}, `--watch "soon": give an interval`},
		{[]string{"hitrate", "--scrape", "127.0.0.1:1", "--watch=0s"}, "the interval must be positive"},
		{[]string{"hitrate", "--scrape", "127.0.0.1:1", "5s"}, "an interval goes after --watch"},
		{[]string{"hitrate", "--scrape", "127.0.0.1:1", "--window", "1m", "--watch"}, "the rates are over the interval between refreshes"},
		{[]string{"hitrate", "--prometheus", "http://127.0.0.1:1", "--time", "0", "--watch"}, "a watch evaluates now"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tt.args, streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, nil)
		if code != exitUsage || !strings.Contains(errOut.String(), tt.want) || !strings.Contains(errOut.String(), "kvcheck hitrate --help") {
			t.Errorf("%v: exit %d, stderr %q; want %d with %q and hitrate's help", tt.args, code, errOut.String(), exitUsage, tt.want)
		}
	}
}

// TestHitrateWatchPrometheus watches through the Prometheus API: the first refresh meets a
// failing query (the server answers 503 once), which is reported and does not end the watch;
// the next refreshes show pods p0 and p1, and once p1's series are gone, p1 is marked gone.
func TestHitrateWatchPrometheus(t *testing.T) {
	var calls atomic.Int32
	var onlyP0 atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(r.Form.Get("query"), "vllm:cache_config_info") {
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
			return
		}
		series := `{"metric":{"pod":"p0","block_size":"16","enable_prefix_caching":"True"},"value":[1764496860,"1"]}`
		if !onlyP0.Load() {
			series += `,{"metric":{"pod":"p1","block_size":"16","enable_prefix_caching":"True"},"value":[1764496860,"1"]}`
		}
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[`+series+`]}}`)
	}))
	defer srv.Close()
	base, cancelBase := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelBase()
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	pr, pw := io.Pipe()
	var errOut bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"hitrate", "--prometheus", srv.URL, "--watch=50ms", "-o", "json"}, streams{In: strings.NewReader(""), Out: pw, ErrOut: &errOut}, nil)
		_ = pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	first, gone := 0, false
	for sc.Scan() {
		var l watchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%v: %q", err, sc.Text())
		}
		if first == 0 {
			first = l.Refresh
			if len(l.Replicas) != 2 {
				t.Errorf("first refresh: %d replicas, want p0 and p1", len(l.Replicas))
			}
			onlyP0.Store(true)
		}
		if l.state("p1") == "gone" {
			gone = true
			cancel(cli.Interrupted{Sig: syscall.SIGINT})
		}
	}
	if got := <-code; got != exitOK {
		t.Errorf("exit %d, want 0; stderr %q", got, errOut.String())
	}
	if first != 1 || !gone {
		t.Errorf("first refresh shown %d, p1 gone %v; want 1 (the failed attempt is not a refresh) and true", first, gone)
	}
	if !strings.Contains(errOut.String(), "kvcheck: refresh failed at ") || !strings.Contains(errOut.String(), "(1 in a row; none shown yet)") || !strings.Contains(errOut.String(), "503") {
		t.Errorf("stderr %q, want the failed refresh reported", errOut.String())
	}
}

// TestHitrateWatchNeverReached: a watch whose every refresh failed measured nothing. Ctrl-C
// then ends it with exit 1 and the last failure, not exit 0, which a script reads as "the
// fleet was watched and nothing reached --fail-on".
func TestHitrateWatchNeverReached(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	base, cancelBase := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelBase()
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	var out, errOut bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"hitrate", "--prometheus", srv.URL, "--watch=20ms", "-o", "json", "--fail-on", "warning"}, streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, nil)
	}()
	for calls.Load() < 18 { // three refreshes of six queries
		time.Sleep(10 * time.Millisecond)
	}
	cancel(cli.Interrupted{Sig: syscall.SIGINT})
	if got := <-code; got != exitRuntime {
		t.Errorf("exit %d, want %d; stderr %q", got, exitRuntime, errOut.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q, want nothing: no refresh was shown", out.String())
	}
	if !strings.Contains(errOut.String(), "no refresh succeeded") || !strings.Contains(errOut.String(), "503") {
		t.Errorf("stderr %q, want no refresh succeeded and the last failure", errOut.String())
	}
}
