package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/fleet"
)

// reflector answers every request as a misconfigured proxy might: an HTML error page that
// echoes the request's Authorization header.
func reflector(t *testing.T, status int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<html><body>bad gateway for Authorization: %s</body></html>", r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSecretsNotShown: a password given in a URL's userinfo, and the credentials an answer
// reflects, appear nowhere in what kvcheck prints, on the error paths of every command that
// takes a URL and in the report of one that succeeds (source line, JSON inputs).
func TestSecretsNotShown(t *testing.T) {
	const password = "hunter2pw"
	basic := base64.StdEncoding.EncodeToString([]byte("user:" + password))
	withUser := func(u string) string { return strings.Replace(u, "http://", "http://user:"+password+"@", 1) }
	withToken := func(u string) string { return u + "/?token=" + password + "&api_key=" + password }
	bad := reflector(t, http.StatusBadGateway)
	ok := reflector(t, http.StatusOK) // 200 with HTML: not the API's JSON
	f := startFleet(t, fleet.Options{Replicas: fleet.Uniform(1, fleet.Config{WarmupSteps: 50}), Tick: time.Millisecond})
	tests := []struct {
		name string
		args []string
		// shown must appear: the URL with its password masked (the text report of a scrape
		// names no URL).
		shown string
	}{
		{"hitrate prometheus 502", []string{"hitrate", "--prometheus", withUser(bad.URL)}, "user:xxxxx@"},
		{"hitrate prometheus html", []string{"hitrate", "--prometheus", withUser(ok.URL)}, "user:xxxxx@"},
		{"hitrate scrape 502", []string{"hitrate", "--window", "10ms", "--scrape", withUser(bad.URL)}, "user:xxxxx@"},
		{"hitrate scrape ok json", []string{"hitrate", "-o", "json", "--window", "100ms", "--scrape", withUser(f.URLs()[0])}, "user:xxxxx@"},
		{"hitrate scrape ok text", []string{"hitrate", "--window", "100ms", "--scrape", withUser(f.URLs()[0])}, ""},
		{"assess prometheus", []string{"assess", "--prometheus", withUser(ok.URL)}, "user:xxxxx@"},
		{"lint prometheus", []string{"lint", "--prometheus", withUser(ok.URL), "../../testdata/lint"}, "user:xxxxx@"},
		{"audit tokenize", []string{"audit", "--tokenize", withUser(bad.URL), "--requests", "../../internal/demo/testdata/requests.jsonl"}, "user:xxxxx@"},
		// A token in the query string (issue 23): masked in text errors, JSON and SARIF.
		{"hitrate prometheus token", []string{"hitrate", "--prometheus", withToken(bad.URL)}, "token=xxxxx"},
		{"hitrate scrape token 502", []string{"hitrate", "--window", "10ms", "--scrape", withToken(bad.URL)}, "token=xxxxx"},
		{"hitrate scrape token json", []string{"hitrate", "-o", "json", "--window", "100ms", "--scrape", withToken(f.URLs()[0])}, "token=xxxxx"},
		{"assess prometheus token", []string{"assess", "--prometheus", withToken(ok.URL)}, "token=xxxxx"},
		{"lint prometheus token sarif", []string{"lint", "-o", "sarif", "--prometheus", withToken(ok.URL), "../../testdata/lint"}, "token=xxxxx"},
		{"lint prometheus token json", []string{"lint", "-o", "json", "--prometheus", withToken(ok.URL), "../../testdata/lint"}, "token=xxxxx"},
		{"audit tokenize token", []string{"audit", "--tokenize", withToken(bad.URL), "--requests", "../../internal/demo/testdata/requests.jsonl"}, "key=xxxxx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tt.args, streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, nil)
			all := out.String() + errOut.String()
			if strings.Contains(all, password) || strings.Contains(all, basic) {
				t.Errorf("exit %d; the password or the reflected credentials are shown:\n%s", code, all)
			}
			if !strings.Contains(all, tt.shown) {
				t.Errorf("exit %d; output does not name the URL as %q:\n%s", code, tt.shown, all)
			}
		})
	}
}

// TestHitratePrometheusEndlessAnswer: a server streaming an endless answer stops being read at
// --max-response-mib, with a runtime error naming the limit, instead of taking the memory.
func TestHitratePrometheusEndlessAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[`))
		chunk := []byte(strings.Repeat(`{"metric":{},"value":[1,"1"]},`, 1000))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"hitrate", "--prometheus", srv.URL, "--max-response-mib", "1"}, streams{Out: &out, ErrOut: &errOut}, nil)
	if code != exitRuntime || !strings.Contains(errOut.String(), "larger than 1 MiB (--max-response-mib)") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming the 1 MiB limit", code, errOut.String())
	}
	if ctx.Err() != nil {
		t.Error("ran into the test deadline instead of stopping at the limit")
	}
}
