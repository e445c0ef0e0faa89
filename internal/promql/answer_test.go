package promql

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/kvcheck/kvcheck/internal/testutil"
)

// TestStreamQuerierAsClientGolang: the streaming instant query gives what client_golang's
// Query gives for the same answer: the value, the warnings and infos, and the error's type and
// message (HTTP errors, API errors, an answer that is not the API's JSON, a refused POST
// retried as a GET).
func TestStreamQuerierAsClientGolang(t *testing.T) {
	const vector = `{"status":"success","data":{"resultType":"vector","result":[` +
		`{"metric":{"pod":"a","kvcheck_metric":"vllm:prefix_cache_hits_total"},"value":[1700000000.5,"12.25"]},` +
		`{"metric":{"pod":"b","kvcheck_metric":"vllm:prefix_cache_hits_total"},"value":[1700000000.5,"NaN"]},` +
		`{"metric":{"pod":"c"},"histogram":[1700000000.5,{"count":"2","sum":"3","buckets":[[0,"0","1","2"]]}]}]},` +
		`"warnings":["partial response"],"infos":["note"]}`
	for _, tc := range []struct {
		name   string
		status int
		body   string
		// postRefused answers a POST with this status (the GET gets the answer).
		postRefused int
	}{
		{name: "vector", status: 200, body: vector},
		{name: "result before its type", status: 200, body: `{"status":"success","data":{"result":[{"metric":{},"value":[1,"2"]}],"resultType":"vector"}}`},
		{name: "empty vector", status: 200, body: `{"status":"success","data":{"resultType":"vector","result":[]}}`},
		{name: "scalar", status: 200, body: `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"3"]}}`},
		{name: "matrix", status: 200, body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1,"1"],[2,"2"]]}]}}`},
		{name: "api error", status: 422, body: `{"status":"error","errorType":"execution","error":"query timed out","warnings":["w"]}`},
		{name: "bad data", status: 400, body: `{"status":"error","errorType":"bad_data","error":"parse error"}`},
		{name: "api error without type", status: 400, body: `{"status":"error"}`},
		{name: "success with an error code", status: 400, body: `{"status":"success","data":{"resultType":"vector","result":[]}}`},
		{name: "server error", status: 503, body: "<html>maintenance</html>"},
		{name: "client error", status: 404, body: "not found"},
		{name: "error status in a 200", status: 200, body: `{"status":"error","errorType":"internal","error":"boom"}`},
		{name: "refused post", status: 200, body: vector, postRefused: 405},
		{name: "refused post 403", status: 200, body: vector, postRefused: 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var methods []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				methods = append(methods, r.Method)
				if err := r.ParseForm(); err != nil || r.Form.Get("query") != "up" || r.URL.Path != "/api/v1/query" {
					t.Errorf("request %s %s form %v (%v)", r.Method, r.URL.Path, r.Form, err)
				}
				if r.Method == http.MethodPost && tc.postRefused != 0 {
					w.WriteHeader(tc.postRefused)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			api, err := Conn{URL: srv.URL}.API()
			if err != nil {
				t.Fatal(err)
			}
			stream, err := Conn{URL: srv.URL}.Querier()
			if err != nil {
				t.Fatal(err)
			}
			at := time.Unix(1700000000, 0)
			wantV, wantW, wantI, wantErr := api.Query(context.Background(), "up", at)
			wantMethods := methods
			methods = nil
			gotV, gotW, gotI, gotErr := stream.Query(context.Background(), "up", at)
			if d := cmp.Diff(fmt.Sprint(wantV), fmt.Sprint(gotV)); d != "" {
				t.Errorf("value (-client_golang +stream):\n%s", d)
			}
			if fmt.Sprint(wantW, wantI) != fmt.Sprint(gotW, gotI) {
				t.Errorf("warnings, infos %v %v; client_golang's %v %v", gotW, gotI, wantW, wantI)
			}
			if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
				t.Errorf("error %v; client_golang's %v", gotErr, wantErr)
			}
			if fmt.Sprint(wantMethods) != fmt.Sprint(methods) {
				t.Errorf("methods %v; client_golang's %v", methods, wantMethods)
			}
		})
	}
}

// TestStreamQuerierNotJSON: an answer that is not the API's JSON is an ErrBadResponse whose
// message keeps the answer's start for --verbose, and HideBody takes it out.
func TestStreamQuerierNotJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html>login as Authorization: Bearer s3cr3t</html>")
	}))
	defer srv.Close()
	q, err := Conn{URL: srv.URL}.Querier()
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = q.Query(context.Background(), "up", time.Time{})
	var apiErr *promv1.Error
	if !errors.As(err, &apiErr) || apiErr.Type != promv1.ErrBadResponse || !strings.Contains(err.Error(), "<html>login") {
		t.Fatalf("err %v; want a bad_data error quoting the answer's start", err)
	}
	if strings.Contains(HideBody(err).Error(), "s3cr3t") {
		t.Errorf("HideBody left the answer in %v", err)
	}
}

// bigVector is an instant-query answer of about size bytes: one series per replica of the
// queries' shape (a tag, pod, instance, engine and model), each a replica of its own.
func bigVector(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := 0; b.Len() < size-300; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"kvcheck_metric":"vllm:prefix_cache_queries_total","pod":"vllm-%d","instance":"10.%d.%d.%d:8000","engine":"0","model_name":"meta-llama/Llama-3.1-8B-Instruct"},"value":[1700000000,"%d.5"]}`, i, i>>16&255, i>>8&255, i&255, i)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// TestStreamQuerierMemory: an answer at --max-response-mib's default (64 MiB, 325,000 series)
// is decoded as it is read, its label names and values stored once. client_golang's Query held
// the body, then decoded each string apart: 438 MiB of heap at its peak here; the stream
// 184 MiB. The vector itself is about 350 bytes a sample (a Sample, its five-label map),
// 110 MiB; the bound allows the collector's doubling of what is live over that.
func TestStreamQuerierMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("decodes a 64 MiB answer; skipped with -short and under the race detector")
	}
	body := bigVector(DefaultMaxResponse - 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	q, err := Conn{URL: srv.URL}.Querier()
	if os.Getenv("KVCHECK_CLIENT_GOLANG") != "" { // the reference: client_golang's Query
		q, err = Conn{URL: srv.URL}.API()
	}
	if err != nil {
		t.Fatal(err)
	}
	var n int
	peak := testutil.PeakHeap(func() {
		v, _, _, qerr := q.Query(context.Background(), "x", time.Now())
		err = qerr
		if vec, ok := v.(interface{ Len() int }); ok {
			n = vec.Len()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("answer of %d MiB, %d series: peak heap %d MiB", len(body)>>20, n, peak>>20)
	if peak > 256<<20 {
		t.Errorf("peak heap %d MiB decoding a %d MiB answer, want at most 256 MiB", peak>>20, len(body)>>20)
	}
}

// TestCollectAnswerMemory: hitrate's Collect over an answer at the 64 MiB bound whose 325,000
// series are each a replica of their own (the worst case: one observation per series). The
// answer is decoded as it is read, let go sample by sample as it becomes points, and the points
// are counted as they are made; what remains is the observations' assembly, about 2 KB a
// replica at its peak (a replica's record, the maps of its metrics and names, its observation),
// as for a dump. client_golang's Query and the points held whole peaked at 887 MiB here.
func TestCollectAnswerMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("decodes a 64 MiB answer; skipped with -short and under the race detector")
	}
	body := bigVector(DefaultMaxResponse - 1024)
	small := []byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if q := r.Form.Get("query"); strings.Contains(q, "rate(") && !strings.Contains(q, "resets(") {
			_, _ = w.Write(body)
			return
		}
		_, _ = w.Write(small)
	}))
	defer srv.Close()
	q, err := Conn{URL: srv.URL}.Querier()
	if err != nil {
		t.Fatal(err)
	}
	var in Input
	peak := testutil.PeakHeap(func() {
		in, err = Prometheus{API: q, URL: srv.URL, Window: 5 * time.Minute}.Collect(context.Background())
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("answer of %d MiB: %d replicas, peak heap %d MiB", len(body)>>20, len(in.Observations), peak>>20)
	if len(in.Observations) != 325050 || peak > 1<<30 {
		t.Errorf("%d replicas at a peak of %d MiB; want 325050 within 1 GiB", len(in.Observations), peak>>20)
	}
}
