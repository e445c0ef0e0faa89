package promql

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHTTPConfigFile: --http-config-file's relative file names are relative to its own
// directory (as Prometheus reads them), a file over 1 MiB is refused naming the bound instead of
// read whole (a device or a pipe given by mistake), and a key it does not know is an error
// naming the file.
func TestHTTPConfigFile(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
	}))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "http.yml")
	if err := os.WriteFile(cfg, []byte("authorization:\n  credentials_file: token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // "token" must not resolve against the working directory
	hc, err := Conn{URL: srv.URL, HTTPConfigFile: cfg}.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got != "Bearer file-token" {
		t.Errorf("Authorization %q, want the token from the file beside the config", got)
	}

	big := filepath.Join(dir, "big.yml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", 1<<20)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Conn{URL: srv.URL, HTTPConfigFile: big}).HTTPClient(); err == nil || !strings.Contains(err.Error(), "larger than 1024 KiB") || !strings.Contains(err.Error(), big) {
		t.Errorf("a 1 MiB config: %v, want the bound and the file named", err)
	}
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("bearer_tokn: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Conn{URL: srv.URL, HTTPConfigFile: bad}).HTTPClient(); err == nil || !strings.Contains(err.Error(), "bad.yml") {
		t.Errorf("an unknown key: %v, want an error naming the file", err)
	}
}
