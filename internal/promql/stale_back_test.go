package promql

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestScrapeSampleTimeGoesBack: the second scrape's samples are older than the first's (two
// processes behind one address, a load balancer alternating between them). The target is down,
// as for samples that stayed put, but the reason said "its newest sample timestamp stayed at"
// the first one's time, which is false: it went back. The reason names both times.
func TestScrapeSampleTimeGoesBack(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ts := int64(1764496800000)
		if n.Add(1) > 1 {
			ts -= 30_000
		}
		fmt.Fprintf(w, "vllm:prefix_cache_queries_total{instance=\"r1:8000\",model_name=\"m\"} 1000 %d\n"+
			"vllm:prefix_cache_hits_total{instance=\"r1:8000\",model_name=\"m\"} 500 %d\n", ts, ts)
	}))
	defer srv.Close()
	tg, _ := ParseTarget(srv.URL)
	in, err := Scraper{Timeout: 5 * time.Second}.Collect(context.Background(), []Target{tg}, time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(in)
	if len(rep.Replicas) != 0 || len(rep.Down) != 1 {
		t.Fatalf("replicas %+v, down %+v; want the target down", rep.Replicas, rep.Down)
	}
	msg := rep.Down[0].Error
	if strings.Contains(msg, "stayed at") || !strings.Contains(msg, "went back from 2025-11-30T10:00:00Z to 2025-11-30T09:59:30Z") {
		t.Errorf("down reason %q, want the sample time going back named with both times", msg)
	}
}
