package vllm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/fleet"
)

func TestCacheConfigOf(t *testing.T) {
	on, off := true, false
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   CacheConfig
	}{
		{"vLLM's labels", map[string]string{"block_size": "16", "enable_prefix_caching": "True", "num_gpu_blocks": "2048", "prefix_caching_hash_algo": "sha256_cbor", "cache_dtype": "auto"},
			CacheConfig{BlockSize: 16, PrefixCaching: &on, NumGPUBlocks: 2048, HashAlgo: "sha256_cbor"}},
		{"caching off", map[string]string{"block_size": "32", "enable_prefix_caching": "False"}, CacheConfig{BlockSize: 32, PrefixCaching: &off}},
		// Older versions: no enable_prefix_caching label, num_gpu_blocks "None" before profiling.
		{"unknowns stay unknown", map[string]string{"block_size": "16", "num_gpu_blocks": "None"}, CacheConfig{BlockSize: 16}},
		{"nonsense", map[string]string{"block_size": "-16", "enable_prefix_caching": "maybe", "num_gpu_blocks": "0"}, CacheConfig{}},
	} {
		got := CacheConfigOf(tc.labels)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if (CacheConfig{}).CachingOff() || !(CacheConfig{PrefixCaching: &off}).CachingOff() || (CacheConfig{PrefixCaching: &on}).CachingOff() {
		t.Error("CachingOff must be true only when the setting is known to be off")
	}
}

func TestParseCacheConfig(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int // block size; 0 for an error
		err        string
	}{
		{"vLLM 0.26", "# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\",enable_prefix_caching=\"True\"} 1.0\n", 16, ""},
		{"no series", "vllm:num_requests_running 1\n", 0, ErrNoCacheConfig.Error()},
		{"no block size", "vllm:cache_config_info{enable_prefix_caching=\"True\"} 1\n", 0, "has no block_size label"},
		{"bad block size", "vllm:cache_config_info{block_size=\"x\"} 1\n", 0, `block_size "x" is not a positive integer`},
		{"not an exposition", "<html>", 0, "parse metrics"},
	} {
		cc, err := ParseCacheConfig(strings.NewReader(tc.body))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || cc.BlockSize != tc.want {
			t.Errorf("%s: %+v, %v; want block size %d", tc.name, cc, err, tc.want)
		}
	}
}

// TestClient runs the client against the emulated replica's real handlers (internal/fleet).
func TestClient(t *testing.T) {
	off := false
	f, err := fleet.New(fleet.Options{Replicas: []fleet.Config{{Version: "0.10.1", PrefixCaching: &off}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	rep := f.Replicas()[0]
	c := &Client{BaseURL: rep.URL() + "/"} // a trailing slash is the same server
	ctx := context.Background()

	v, err := c.Version(ctx)
	if err != nil || v != "0.10.1" {
		t.Errorf("Version = %q, %v; want 0.10.1", v, err)
	}
	cc, err := c.CacheConfig(ctx)
	if err != nil || !cc.CachingOff() || cc.BlockSize != rep.Config().BlockSize || cc.NumGPUBlocks == 0 {
		t.Errorf("CacheConfig = %+v, %v; want caching off, block size %d, num_gpu_blocks", cc, err, rep.Config().BlockSize)
	}
	prompt := "hello world"
	ids, _, err := c.Tokenize(ctx, TokenizeRequest{Prompt: &prompt})
	if err != nil || len(ids) == 0 {
		t.Errorf("Tokenize = %v, %v; want ids", ids, err)
	}

	// A 400 comes back as a *ServerError with vLLM's message; /version missing is an error.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"too long","type":"BadRequestError","code":400}}`)
	}))
	t.Cleanup(bad.Close)
	bc := &Client{BaseURL: bad.URL}
	_, _, err = bc.Tokenize(ctx, TokenizeRequest{Prompt: &prompt})
	var se *ServerError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest || se.Message != "too long" {
		t.Errorf("Tokenize on a 400: %v, want a ServerError with the server's message", err)
	}
	if _, err := bc.Version(ctx); err == nil {
		t.Error("Version on a 400: no error")
	}
	if _, err := bc.CacheConfig(ctx); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("CacheConfig on a 400: %v, want the status", err)
	}
}

func TestCachingOff(t *testing.T) {
	f := CachingOff("http://127.0.0.1:8000")
	if f.Code != "prefix-caching-off" || f.Subject != "http://127.0.0.1:8000" || f.Severity.String() != "error" || !strings.Contains(f.Fix, "--no-enable-prefix-caching") {
		t.Errorf("CachingOff = %+v", f)
	}
}

// FuzzServerAnswers: the readers of a server's answers (/metrics, error bodies) never panic
// whatever the server sends, and never accept a block size that is not positive.
func FuzzServerAnswers(f *testing.F) {
	f.Add([]byte("vllm:cache_config_info{block_size=\"16\",enable_prefix_caching=\"True\"} 1\n"))
	f.Add([]byte("vllm:cache_config_info{block_size=\"x\"} 1\n"))
	f.Add([]byte(`{"error":{"message":"m","type":"BadRequestError","param":null,"code":400}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if cc, err := ParseCacheConfig(bytes.NewReader(data)); err == nil && cc.BlockSize <= 0 {
			t.Fatalf("accepted block size %d", cc.BlockSize)
		}
		_ = serverMessage(data)
	})
}

// TestClientRedacts: a password in the server's URL never reaches a message.
func TestClientRedacts(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "<html>bad gateway for %s</html>", r.Header.Get("Authorization"))
	}))
	t.Cleanup(proxy.Close)
	c := &Client{BaseURL: strings.Replace(proxy.URL, "http://", "http://user:s3cret@", 1)}
	ctx := context.Background()
	prompt := "x"
	_, _, terr := c.Tokenize(ctx, TokenizeRequest{Prompt: &prompt})
	_, cerr := c.CacheConfig(ctx)
	_, verr := c.Version(ctx)
	for _, err := range []error{terr, cerr, verr} {
		if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "Basic") {
			t.Errorf("error %v: want one without the password or the echoed header", err)
		}
	}
	if got := c.Shown(); strings.Contains(got, "s3cret") || !strings.Contains(got, "user:") {
		t.Errorf("Shown() = %q", got)
	}
}

// TestCacheConfigHybrid: vLLM sets mamba_block_size only for hybrid models; a plain model's
// label reads None (Python's str of an unset Optional).
func TestCacheConfigHybrid(t *testing.T) {
	h := CacheConfigOf(map[string]string{"block_size": "528", "mamba_block_size": "528", "mamba_cache_mode": "align"})
	if !h.Hybrid() || h.MambaBlockSize != 528 || h.MambaCacheMode != "align" {
		t.Errorf("hybrid: %+v", h)
	}
	p := CacheConfigOf(map[string]string{"block_size": "16", "mamba_block_size": "None", "mamba_cache_mode": "None"})
	if p.Hybrid() || p.MambaCacheMode != "" {
		t.Errorf("plain: %+v", p)
	}
}

// TestBoundedAnswer: an answer past the bound is an error naming it, not a cut answer that
// then reads as malformed JSON; one of exactly the bound is read whole.
func TestBoundedAnswer(t *testing.T) {
	for _, tt := range []struct {
		size    int
		wantErr bool
	}{{10, false}, {11, true}} {
		b, err := io.ReadAll(bounded(strings.NewReader(strings.Repeat("x", tt.size)), 10))
		if (err != nil) != tt.wantErr || (err == nil && len(b) != tt.size) {
			t.Errorf("size %d: read %d, err %v; want error %v", tt.size, len(b), err, tt.wantErr)
		}
	}
}
