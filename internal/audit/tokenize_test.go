package audit

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/usage"
)

func TestTokenizeCheck(t *testing.T) {
	tests := []struct {
		name string
		t    Tokenize
		want string // "" accepts
	}{
		{"defaults", DefaultTokenize, ""},
		{"defaults with a server and model", Tokenize{URL: "http://x", Model: "m", Concurrency: 8, Timeout: time.Second}, ""},
		{"most in flight", Tokenize{Concurrency: 256, Timeout: time.Second}, ""},
		{"none in flight", Tokenize{Concurrency: 0, Timeout: time.Second}, "--concurrency 0: want 1 to 256"},
		{"too many in flight", Tokenize{Concurrency: 257, Timeout: time.Second}, "--concurrency 257: want 1 to 256"},
		{"no timeout", Tokenize{Concurrency: 1}, "--timeout 0s: must be positive"},
		{"model without a server", Tokenize{Model: "m", Concurrency: 1, Timeout: time.Second}, "--model needs --tokenize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.t.Check()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check() = %v, want nil", err)
			case tt.want == "":
			case err == nil || err.Error() != tt.want || !usage.Is(err):
				t.Fatalf("Check() = %v, want the usage error %q", err, tt.want)
			}
		})
	}
}

type notes []string

func (n *notes) Note(format string, args ...any) { *n = append(*n, fmt.Sprintf(format, args...)) }

// TestTokenizeConnect connects to a replica that gives its block size (no note) and to a
// server whose /metrics lacks vllm:cache_config_info: then the fallback is used, Assumed is
// set and the one note says so, naming the server.
func TestTokenizeConnect(t *testing.T) {
	ctx := context.Background()
	t.Run("block size from the server", func(t *testing.T) {
		srv := replica(t, 32, "True", time.Now)
		var n notes
		r, err := Tokenize{URL: srv.URL, Concurrency: 1, Timeout: 5 * time.Second}.Connect(ctx, &n, 16)
		if err != nil {
			t.Fatal(err)
		}
		if r.BlockSize != 32 || r.Assumed || len(n) != 0 {
			t.Errorf("block size %d, assumed %v, notes %q; want 32, false, none", r.BlockSize, r.Assumed, n)
		}
	})
	t.Run("no cache config", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintln(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0")
		}))
		t.Cleanup(srv.Close)
		var n notes
		r, err := Tokenize{URL: srv.URL, Concurrency: 1, Timeout: 5 * time.Second}.Connect(ctx, &n, 64)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimPrefix(srv.URL, "http://") + "/metrics has no vllm:cache_config_info; assuming block size 64"
		if r.BlockSize != 64 || !r.Assumed || len(n) != 1 || !strings.HasSuffix(n[0], want) {
			t.Errorf("block size %d, assumed %v, notes %q; want 64, true, one note ending %q", r.BlockSize, r.Assumed, n, want)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		var n notes
		if _, err := (Tokenize{URL: srv.URL, Concurrency: 1, Timeout: time.Second}).Connect(ctx, &n, 16); err == nil || !strings.Contains(err.Error(), "check --tokenize") {
			t.Errorf("Connect to a closed server: %v, want an error saying to check --tokenize", err)
		}
	})
}
