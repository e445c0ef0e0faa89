package promql

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestRedirectDropsHeaders: the extra headers (--header, and the config file's http_headers)
// reach the host the user named and a redirect on it, never a host a redirect moves to, as
// Go's client treats Authorization (which still goes to the first host only). The servers are
// real: the origin answers on 127.0.0.1 and redirects to "localhost" at the other server's
// port, another host name for the same machine.
func TestRedirectDropsHeaders(t *testing.T) {
	type seen struct{ apiKey, orgID, fileKey, auth string }
	var mu sync.Mutex
	got := map[string]seen{}
	record := func(name string, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got[name] = seen{r.Header.Get("X-Api-Key"), r.Header.Get("X-Scope-Orgid"), r.Header.Get("X-File-Key"), r.Header.Get("Authorization")}
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("other host", r)
		fmt.Fprint(w, "ok")
	}))
	defer other.Close()
	otherURL := fmt.Sprintf("http://localhost:%d/landed", other.Listener.Addr().(*net.TCPAddr).Port)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			record("origin", r)
			http.Redirect(w, r, "/same-landed", http.StatusFound)
		case "/same-landed":
			record("same host after a redirect", r)
			fmt.Fprint(w, "ok")
		case "/away":
			record("origin", r)
			http.Redirect(w, r, otherURL, http.StatusFound)
		}
	}))
	defer origin.Close()

	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	token := write("token", "bearer-secret\n")
	key := write("key", "file-secret\n")
	cfgFile := write("http.yml", "http_headers:\n  X-File-Key:\n    files: ["+key+"]\n")
	c := Conn{URL: origin.URL, Headers: []string{"X-Api-Key: k-secret", "X-Scope-OrgID: tenant-1"}, BearerTokenFile: token, HTTPConfigFile: cfgFile}
	hc, err := c.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) {
		t.Helper()
		resp, err := hc.Get(origin.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	all := seen{"k-secret", "tenant-1", "file-secret", "Bearer bearer-secret"}
	get("/same")
	if g := got["origin"]; g != all {
		t.Errorf("origin got %+v, want %+v", g, all)
	}
	if g := got["same host after a redirect"]; g != all {
		t.Errorf("a redirect on the same host got %+v, want every header again: %+v", g, all)
	}
	get("/away")
	if g := got["origin"]; g != all {
		t.Errorf("origin got %+v, want %+v", g, all)
	}
	if g, ok := got["other host"]; !ok || g != (seen{}) {
		t.Errorf("the host the redirect moved to got %+v (reached %v), want no header of ours", g, ok)
	}
}

func TestSameOrSubdomain(t *testing.T) {
	tests := []struct {
		host, origin string
		want         bool
	}{
		{"prom.example.com", "prom.example.com", true},
		{"a.prom.example.com", "prom.example.com", true},
		{"evilprom.example.com", "prom.example.com", false},
		{"example.com", "prom.example.com", false},
		{"127.0.0.1", "127.0.0.1", true},
		{"localhost", "127.0.0.1", false},
		{"1.127.0.0.1", "127.0.0.1", false},
		{"::1", "1", false},
	}
	for _, tt := range tests {
		if got := sameOrSubdomain(tt.host, tt.origin); got != tt.want {
			t.Errorf("sameOrSubdomain(%q, %q) = %v, want %v", tt.host, tt.origin, got, tt.want)
		}
	}
}
