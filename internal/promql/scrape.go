package promql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kvcheck/kvcheck/internal/secret"
	"github.com/kvcheck/kvcheck/internal/vllm"
)

// Scraper reads /metrics straight from replicas, for when there is no Prometheus.
type Scraper struct {
	// Client carries auth and TLS; nil means http.DefaultClient.
	Client *http.Client
	// Timeout bounds each request to each target.
	Timeout time.Duration
	// By are the replica labels; empty means one replica per target (engines summed).
	By []string
	// Verbose puts the start of an error answer's body into the error. Off, an error names
	// the status line only: a body can reflect request headers, credentials among them.
	Verbose bool
}

// maxConcurrentScrapes bounds the requests in flight, so a fleet of thousands of targets does
// not open thousands of connections at once.
const maxConcurrentScrapes = 64

// Target is a replica's /metrics address and the name it gets in the report.
type Target struct {
	URL  string
	Name string
}

// ParseTarget accepts host:port, a base URL, or a full /metrics URL, optionally prefixed with
// "name=" to name the replica in the report (by default it is named host:port).
func ParseTarget(s string) (Target, error) {
	raw := strings.TrimSpace(s)
	name := ""
	if i := strings.Index(raw, "="); i > 0 && !strings.Contains(raw[:i], "/") && !strings.Contains(raw[:i], ":") {
		name, raw = raw[:i], raw[i+1:]
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return Target{}, fmt.Errorf("target %q: give host:port or an http(s) URL such as http://10.0.0.7:8000/metrics", s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/metrics"
	}
	if name == "" {
		name = u.Host
	}
	return Target{URL: u.String(), Name: name}, nil
}

// Targets parses the --scrape and --targets values into distinct targets. The same URL given
// twice is scraped once. Targets behind one host:port (a kubectl proxy, a gateway routing by
// path) would share the default name and overwrite each other's figures, so they are named by
// host and path instead; the same explicit name for two URLs is an error.
func Targets(raw []string) ([]Target, error) {
	var out []Target
	seenURL := map[string]bool{}
	for _, r := range raw {
		t, err := ParseTarget(r)
		if err != nil {
			return nil, err
		}
		if seenURL[t.URL] {
			continue
		}
		seenURL[t.URL] = true
		out = append(out, t)
	}
	count := map[string]int{}
	for _, t := range out {
		count[t.Name]++
	}
	for i, t := range out {
		if count[t.Name] < 2 {
			continue
		}
		u, err := url.Parse(t.URL)
		if err != nil || t.Name != u.Host {
			return nil, fmt.Errorf("target name %q given to more than one URL: give each replica its own name", t.Name)
		}
		out[i].Name = u.Host + strings.TrimSuffix(u.Path, "/metrics")
	}
	return out, nil
}

// Round scrapes every target once, concurrently, each bounded by the timeout. It returns the
// dumps of the targets that answered, by target name, and the others as down.
func (s Scraper) Round(ctx context.Context, targets []Target, withVersion bool) (map[string]Dump, []Down) {
	var mu sync.Mutex
	dumps := map[string]Dump{}
	var down []Down
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxConcurrentScrapes)
	for _, t := range targets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			d, err := s.scrape(ctx, t, withVersion)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				down = append(down, Down{Target: t.Name, Error: err.Error()})
				return
			}
			dumps[t.Name] = d
		})
	}
	wg.Wait()
	slices.SortFunc(down, func(a, b Down) int { return strings.Compare(a.Target, b.Target) })
	return dumps, down
}

func (s Scraper) client() *http.Client {
	if s.Client != nil {
		return s.Client
	}
	return http.DefaultClient
}

func (s Scraper) get(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client().Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no answer within %s (raise --scrape-timeout?)", s.Timeout)
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body := ""
		if s.Verbose {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			body = ": " + strings.TrimSpace(string(b))
		}
		_ = resp.Body.Close()
		hint := ""
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			hint = " (check --bearer-token-file, --basic-auth-user or --http-config-file)"
		}
		return nil, fmt.Errorf("HTTP %s%s%s", resp.Status, hint, body)
	}
	return resp, nil
}

func (s Scraper) scrape(ctx context.Context, t Target, withVersion bool) (Dump, error) {
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	resp, err := s.get(ctx, t.URL)
	if err != nil {
		return Dump{}, fmt.Errorf("GET %s: %w", secret.Mask(t.URL), err)
	}
	at := time.Now()
	d, err := parseExposition(resp.Body, secret.Mask(t.URL), MaxScrapeSeries)
	_ = resp.Body.Close()
	if err != nil {
		return Dump{}, err
	}
	d.Time = at
	if withVersion {
		d.Version = s.version(ctx, t)
	}
	return d, nil
}

// version asks the replica's /version; servers without it (or behind a proxy that only passes
// /metrics) just leave the version unknown.
func (s Scraper) version(ctx context.Context, t Target) string {
	u, err := url.Parse(t.URL)
	if err != nil || !strings.HasSuffix(u.Path, "/metrics") {
		return ""
	}
	u.Path, u.RawQuery, u.Fragment = strings.TrimSuffix(u.Path, "/metrics"), "", ""
	v, err := (&vllm.Client{BaseURL: u.String(), HTTP: s.client()}).Version(ctx)
	if err != nil {
		return ""
	}
	return v
}

// Compare turns two scrape rounds into an Input: rates over each target's own interval between
// its two answers.
func Compare(targets []Target, a, b map[string]Dump, down []Down, by []string) Input {
	in := Input{Source: SourceScrape, Mode: ModeRate, Down: slices.Clone(down)}
	var total float64
	var n int
	for _, t := range targets {
		in.Inputs = append(in.Inputs, secret.Mask(t.URL))
		da, okA := a[t.Name]
		db, okB := b[t.Name]
		if !okA || !okB {
			continue
		}
		dt := db.Time.Sub(da.Time).Seconds()
		if ta, tb := sampleTime(da), sampleTime(db); !ta.IsZero() && !tb.IsZero() {
			if !tb.After(ta) {
				// Nothing was taken between the scrapes: unchanged counters say nothing of
				// the replicas, which would read as idle.
				msg := fmt.Sprintf("served the same samples at both scrapes, %s apart (its newest sample timestamp stayed at %s): its data did not refresh in between (a federation endpoint or an exporter's cache); scrape the replicas themselves, or wait longer than its refresh", db.Time.Sub(da.Time).Round(time.Millisecond), ta.UTC().Format(time.RFC3339))
				if tb.Before(ta) {
					// Older samples at the second scrape: not a cache that stood still, but
					// another process answering (a load balancer over replicas) or a clock set back.
					msg = fmt.Sprintf("served older samples at the second scrape, %s apart (its newest sample timestamp went back from %s to %s): more than one process answers at this address (a load balancer or Service over several replicas) or its clock went back; scrape each replica itself", db.Time.Sub(da.Time).Round(time.Millisecond), ta.UTC().Format(time.RFC3339), tb.UTC().Format(time.RFC3339))
				}
				in.Down = append(in.Down, Down{Target: t.Name, Error: msg})
				continue
			}
			// The exposition's own timestamps say when the values were taken.
			dt = tb.Sub(ta).Seconds()
		}
		if dt <= 0 {
			in.Down = append(in.Down, Down{Target: t.Name, Error: "the two scrapes have no time between them"})
			continue
		}
		asm := assemble(slices.Values(increase(da, db)), grouping{by: by, fallback: t.Name}, dt)
		in.Gone = append(in.Gone, gone(da, asm.obs, grouping{by: by, fallback: t.Name})...)
		if da.Version != "" {
			for i := range asm.obs {
				asm.obs[i].Version, asm.obs[i].VersionFrom = da.Version, "server"
			}
		}
		in.Observations = append(in.Observations, asm.obs...)
		for _, r := range asm.routers {
			if !slices.Contains(in.Routers, r) {
				in.Routers = append(in.Routers, r)
			}
		}
		for _, s := range append(slices.Clone(da.Stacks), db.Stacks...) {
			in.Stacks = addStack(in.Stacks, s.Product, s.Family)
		}
		total += dt
		n++
	}
	if n > 0 {
		in.Window = total / float64(n)
	}
	slices.Sort(in.Routers)
	return in
}

// Collect scrapes the targets twice, window apart, and returns the Input. progress, when not
// nil, is told what is happening (for stderr).
func (s Scraper) Collect(ctx context.Context, targets []Target, window time.Duration, progress func(string)) (Input, error) {
	if progress == nil {
		progress = func(string) {}
	}
	a, down := s.Round(ctx, targets, true)
	if len(a) == 0 {
		return Input{}, fmt.Errorf("no target answered: %s", downSummary(down))
	}
	progress(fmt.Sprintf("scraped %d of %d targets; second scrape in %s", len(a), len(targets), window))
	t := time.NewTimer(window)
	select {
	case <-ctx.Done():
		t.Stop()
		return Input{}, fmt.Errorf("interrupted before the second scrape: %w", ctx.Err())
	case <-t.C:
	}
	var live []Target
	for _, tg := range targets {
		if _, ok := a[tg.Name]; ok {
			live = append(live, tg)
		}
	}
	b, down2 := s.Round(ctx, live, false)
	if len(b) == 0 {
		return Input{}, fmt.Errorf("no target answered the second scrape: %s", downSummary(down2))
	}
	return Compare(targets, a, b, append(down, down2...), s.By), nil
}

func downSummary(d []Down) string {
	var parts []string
	for i, x := range d {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(d)-3))
			break
		}
		parts = append(parts, x.Target+": "+x.Error)
	}
	return strings.Join(parts, "; ")
}
