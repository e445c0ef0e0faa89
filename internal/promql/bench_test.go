package promql

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/fleet"
)

// countingTransport counts response bytes, for b.SetBytes.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}

// BenchmarkPrometheus200 runs hitrate's Prometheus source against a real Prometheus scraping
// 200 emulated replicas (the first 20 also labelled group="first20"). It reports the number of
// queries per run (constant: 5 for 20 or 200 replicas), the slowest query, and the ratio of
// the whole collection's wall time to its slowest query; "sequential" runs the same queries
// one after another as the reference, in the same process.
func BenchmarkPrometheus200(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f, err := fleet.New(fleet.Options{Replicas: fleet.Uniform(200, fleet.Config{Seed: 1, WarmupSteps: 100}), Tick: 100 * time.Millisecond, StepsPerTick: 2})
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { closeFleet(b, f) })
	var first, rest []string
	for i, r := range f.Replicas() {
		if i < 20 {
			first = append(first, r.Addr())
		} else {
			rest = append(rest, r.Addr())
		}
	}
	ct := &countingTransport{}
	ps := startPrometheus(b, ctx, []targetGroup{{targets: first, labels: map[string]string{"group": "first20"}}, {targets: rest}}, &http.Client{Transport: ct})
	waitFor(b, ctx, "200 replicas with 3 samples each in Prometheus", func() (bool, error) {
		v, err := ps.values(ctx, `count(count_over_time(vllm:prefix_cache_queries_total[1m]) >= 3)`, time.Now())
		if err != nil {
			return false, err
		}
		for _, n := range v {
			return n >= 200, nil
		}
		return false, nil
	})
	for _, bc := range []struct {
		name     string
		selector string
		replicas int
	}{{"replicas=20", `group="first20"`, 20}, {"replicas=200", "", 200}} {
		p := Prometheus{API: ps.api, URL: ps.url, Window: time.Minute, Timeout: 30 * time.Second, Selector: bc.selector}
		b.Run(bc.name+"/concurrent", func(b *testing.B) {
			b.ReportAllocs()
			var wall, slowest time.Duration
			var queries, series int
			perQuery := map[string]float64{}
			ct.n.Store(0)
			for b.Loop() {
				start := time.Now()
				in, err := p.Collect(ctx)
				if err != nil {
					b.Fatal(err)
				}
				wall += time.Since(start)
				if len(in.Observations) != bc.replicas {
					b.Fatalf("%d replicas, want %d", len(in.Observations), bc.replicas)
				}
				var s float64
				for _, q := range in.Queries {
					perQuery[q.Name] += q.Seconds
					s = max(s, q.Seconds)
					series += q.Series
				}
				slowest += time.Duration(s * float64(time.Second))
				queries += len(in.Queries)
			}
			b.SetBytes(ct.n.Load() / int64(b.N))
			b.ReportMetric(float64(queries)/float64(b.N), "queries/op")
			b.ReportMetric(float64(series)/float64(b.N), "series/op")
			b.ReportMetric(float64(slowest.Milliseconds())/float64(b.N), "slowest-ms/op")
			b.ReportMetric(float64(wall)/float64(slowest), "wall/slowest")
			for name, sec := range perQuery {
				b.ReportMetric(sec*1000/float64(b.N), name+"-ms/op")
			}
		})
		b.Run(bc.name+"/sequential", func(b *testing.B) {
			b.ReportAllocs()
			ct.n.Store(0)
			for b.Loop() {
				for _, q := range p.Queries() {
					if _, _, _, err := ps.api.Query(ctx, q.expr, time.Now()); err != nil {
						b.Fatal(fmt.Errorf("query %s: %w", q.name, err))
					}
				}
			}
			b.SetBytes(ct.n.Load() / int64(b.N))
		})
	}
}
