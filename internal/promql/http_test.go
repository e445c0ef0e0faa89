package promql

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// TestCapResponsesEndlessBody: a server that streams a JSON answer without end would be read
// whole into memory by the Prometheus client. Through CapResponses the query fails once the
// bound is crossed, with an error naming the limit and the flag, long before the timeout;
// without the cap it runs into the context deadline.
func TestCapResponsesEndlessBody(t *testing.T) {
	var written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[`))
		chunk := []byte(strings.Repeat(`{"metric":{},"value":[1,"1"]},`, 1000))
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	const limit = 1 << 20
	c, err := api.NewClient(api.Config{Address: srv.URL, RoundTripper: CapResponses(nil, limit)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := Prometheus{API: promv1.NewAPI(c), URL: srv.URL, Window: time.Minute}
	_, err = p.Collect(ctx)
	var tl *ResponseTooLargeError
	if !errors.As(err, &tl) || tl.Max != limit || !strings.Contains(err.Error(), "--max-response-mib") {
		t.Fatalf("Collect = %v, want a ResponseTooLargeError naming the 1 MiB limit", err)
	}
	if ctx.Err() != nil {
		t.Error("the query ran into the deadline instead of stopping at the limit")
	}
}

// TestCapResponsesExactSize: an answer of exactly the bound is read whole; one byte more is not,
// whether the server announces its length or not.
func TestCapResponsesExactSize(t *testing.T) {
	const limit = 1000
	for _, tt := range []struct {
		size     int
		announce bool
		tooLarge bool
	}{{limit, false, false}, {limit + 1, false, true}, {limit, true, false}, {limit + 1, true, true}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !tt.announce {
				w.(http.Flusher).Flush() // chunked: no Content-Length
			}
			_, _ = w.Write([]byte(strings.Repeat("x", tt.size)))
		}))
		hc := &http.Client{Transport: CapResponses(nil, limit)}
		resp, err := hc.Get(srv.URL)
		var n int64
		if err == nil {
			n, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		var tl *ResponseTooLargeError
		if errors.As(err, &tl) != tt.tooLarge || (!tt.tooLarge && n != int64(tt.size)) {
			t.Errorf("size %d (announced %v): read %d, err %v; want too large %v", tt.size, tt.announce, n, err, tt.tooLarge)
		}
		srv.Close()
	}
}
