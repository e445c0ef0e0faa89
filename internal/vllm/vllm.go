// Package vllm is kvcheck's client of one vLLM server's HTTP API: the prefix cache's
// configuration from GET /metrics (vllm:cache_config_info), POST /tokenize and GET /version.
// audit, simulate and assess tokenize through it; hitrate reads /version and the cache
// configuration labels through it, so every command reads a server the same way and says
// "prefix caching is off" the same way (CachingOff).
package vllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/secret"
)

// Client talks to one vLLM server.
type Client struct {
	// BaseURL is the server's address, e.g. http://127.0.0.1:8000.
	BaseURL string
	// HTTP is the client to use; nil means http.DefaultClient.
	HTTP *http.Client
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// endpoint is the URL to request; url is the same as it may be shown in messages.
func (c *Client) endpoint(path string) string { return strings.TrimRight(c.BaseURL, "/") + path }
func (c *Client) url(path string) string      { return strings.TrimRight(c.Shown(), "/") + path }

// Shown is the server's address as it may be shown: its credentials masked (secret.Mask).
func (c *Client) Shown() string { return secret.Mask(c.BaseURL) }

// ConfigInfo is the info metric whose labels hold the engine's cache configuration.
const ConfigInfo = "vllm:cache_config_info"

// CacheConfig is what vllm:cache_config_info says about a server's prefix cache.
type CacheConfig struct {
	// BlockSize is the KV block size in tokens; 0 when the labels do not say.
	BlockSize int
	// PrefixCaching is enable_prefix_caching; nil when the labels do not say.
	PrefixCaching *bool
	// NumGPUBlocks is num_gpu_blocks, the KV cache's size in blocks; 0 when unknown.
	NumGPUBlocks int
	// HashAlgo is prefix_caching_hash_algo, such as sha256 or sha256_cbor; empty when unknown.
	HashAlgo string
	// MambaBlockSize is mamba_block_size, set (to a number of tokens) only for hybrid
	// Mamba/linear-attention models; 0 otherwise or when the labels do not say.
	MambaBlockSize int
	// MambaCacheMode is mamba_cache_mode (all, align, none); empty when the labels do not say.
	MambaCacheMode string
}

// Hybrid reports whether the configuration is a hybrid (Mamba/linear-attention) model's:
// vLLM sets mamba_block_size only for those.
func (cc CacheConfig) Hybrid() bool { return cc.MambaBlockSize > 0 }

// CachingOff reports whether the configuration says prefix caching is off (not unknown).
func (cc CacheConfig) CachingOff() bool { return cc.PrefixCaching != nil && !*cc.PrefixCaching }

// CacheConfigOf reads a vllm:cache_config_info series' labels: the one reader of that metric,
// whether the labels came from /metrics, a dump or a PromQL answer. Values it cannot read are
// left unknown. vLLM writes Python's True/False; Go's spellings are accepted too.
func CacheConfigOf(labels map[string]string) CacheConfig {
	var cc CacheConfig
	if n, err := strconv.Atoi(labels["block_size"]); err == nil && n > 0 {
		cc.BlockSize = n
	}
	if on, err := strconv.ParseBool(labels["enable_prefix_caching"]); err == nil {
		cc.PrefixCaching = &on
	}
	if n, err := strconv.Atoi(labels["num_gpu_blocks"]); err == nil && n > 0 {
		cc.NumGPUBlocks = n
	}
	cc.HashAlgo = labels["prefix_caching_hash_algo"]
	if n, err := strconv.Atoi(labels["mamba_block_size"]); err == nil && n > 0 {
		cc.MambaBlockSize = n
	}
	if m := labels["mamba_cache_mode"]; m != "" && m != "None" {
		cc.MambaCacheMode = m
	}
	return cc
}

// ErrNoCacheConfig is returned when /metrics has no vllm:cache_config_info series.
var ErrNoCacheConfig = errors.New("no vllm:cache_config_info in /metrics")

// CacheConfig reads the cache configuration from the server's /metrics. A series without a
// usable block_size is an error: the caller needs the block size to cut tokens into blocks.
func (c *Client) CacheConfig(ctx context.Context) (CacheConfig, error) {
	url := c.url("/metrics")
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint("/metrics"), nil)
	if err != nil {
		return CacheConfig{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	hreq.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.http().Do(hreq)
	if err != nil {
		return CacheConfig{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return CacheConfig{}, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	return ParseCacheConfig(bounded(resp.Body, 64<<20))
}

// ParseCacheConfig reads vllm:cache_config_info from a Prometheus text exposition.
func ParseCacheConfig(r io.Reader) (CacheConfig, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return CacheConfig{}, fmt.Errorf("parse metrics: %w", err)
	}
	fam, ok := fams[ConfigInfo]
	if !ok || len(fam.GetMetric()) == 0 {
		return CacheConfig{}, ErrNoCacheConfig
	}
	labels := map[string]string{}
	for _, lp := range fam.GetMetric()[0].GetLabel() {
		labels[lp.GetName()] = lp.GetValue()
	}
	cc := CacheConfigOf(labels)
	if cc.BlockSize == 0 {
		bs, ok := labels["block_size"]
		if !ok {
			return CacheConfig{}, errors.New("vllm:cache_config_info has no block_size label")
		}
		return CacheConfig{}, fmt.Errorf("vllm:cache_config_info: block_size %q is not a positive integer", bs)
	}
	return cc, nil
}

// Version asks GET /version for the server's vLLM version.
func (c *Client) Version(ctx context.Context) (string, error) {
	url := c.url("/version")
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint("/version"), nil)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := c.http().Do(hreq)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&v); err != nil {
		return "", fmt.Errorf("GET %s: not vLLM's {version}: %w", url, err)
	}
	return v.Version, nil
}

// TokenizeRequest is the body of POST /tokenize: a prompt, or chat messages rendered by the
// server's chat template (or the one given, which vLLM accepts only when started with
// --trust-request-chat-template).
type TokenizeRequest struct {
	Model               string          `json:"model,omitempty"`
	Prompt              *string         `json:"prompt,omitempty"`
	Messages            json.RawMessage `json:"messages,omitempty"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt,omitempty"`
	AddSpecialTokens    *bool           `json:"add_special_tokens,omitempty"`
	Tools               json.RawMessage `json:"tools,omitempty"`
	ChatTemplate        string          `json:"chat_template,omitempty"`
	ChatTemplateKwargs  json.RawMessage `json:"chat_template_kwargs,omitempty"`
	// ReturnTokenStrs asks for token_strs, which vLLM leaves out by default.
	ReturnTokenStrs *bool `json:"return_token_strs,omitempty"`
}

type tokenizeResponse struct {
	Count     int      `json:"count"`
	Tokens    []int64  `json:"tokens"`
	TokenStrs []string `json:"token_strs"`
}

// maxTokenizeBody bounds a /tokenize answer: about 20 bytes a token for the longest contexts.
const maxTokenizeBody = 256 << 20

// Tokenize sends body to POST /tokenize and returns the token ids and, when asked for, the
// token strings. A non-200 answer is a *ServerError.
func (c *Client) Tokenize(ctx context.Context, body TokenizeRequest) ([]uint32, []string, error) {
	url := c.url("/tokenize")
	buf, err := json.Marshal(body)
	if err != nil {
		return nil, nil, fmt.Errorf("encode tokenize request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint("/tokenize"), bytes.NewReader(buf))
	if err != nil {
		return nil, nil, fmt.Errorf("tokenize %s: %w", url, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.http().Do(hreq)
	if err != nil {
		return nil, nil, fmt.Errorf("tokenize %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(bounded(resp.Body, maxTokenizeBody))
	if err != nil {
		return nil, nil, fmt.Errorf("tokenize %s: read response: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, &ServerError{URL: url, Status: resp.StatusCode, Message: serverMessage(data)}
	}
	var out tokenizeResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, nil, fmt.Errorf("tokenize %s: response is not vLLM's {count, tokens}: %w", url, err)
	}
	ids := make([]uint32, len(out.Tokens))
	for i, t := range out.Tokens {
		if t < 0 || t > 1<<32-1 {
			return nil, nil, fmt.Errorf("tokenize %s: token id %d out of range", url, t)
		}
		ids[i] = uint32(t)
	}
	return ids, out.TokenStrs, nil
}

// ServerError is a non-200 answer from /tokenize. A 400 concerns the one request (too long,
// malformed, or a chat template the server does not accept in requests).
type ServerError struct {
	URL     string
	Status  int
	Message string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("tokenize %s: %d %s: %s", e.URL, e.Status, http.StatusText(e.Status), e.Message)
}

// serverMessage extracts the message of a vLLM error body, in either the current
// {error: {message}} shape or the older flat {message} one.
func serverMessage(data []byte) string {
	var e struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &e) == nil {
		if e.Error != nil && e.Error.Message != "" {
			return e.Error.Message
		}
		if e.Message != "" {
			return e.Message
		}
	}
	// An answer that is not vLLM's JSON error (a proxy's page) can reflect request headers,
	// credentials among them: say what it is, not what it holds.
	return fmt.Sprintf("an answer of %d bytes that is not vLLM's JSON error", len(data))
}

// CachingOffCode is the one finding code for a server running with prefix caching off.
const CachingOffCode = "prefix-caching-off"

// CachingOff is the one way every command reports a server (subject: a replica or a
// --tokenize URL) that runs with prefix caching off: nothing is ever a hit there, whatever the
// prompts or the router.
func CachingOff(subject string) finding.Finding {
	return finding.Finding{Severity: finding.Error, Code: CachingOffCode, Subject: subject,
		Message: "prefix caching is off (vllm:cache_config_info enable_prefix_caching=False): no router can produce hits",
		Fix:     "remove --no-enable-prefix-caching"}
}

// bounded reads r up to n bytes and fails past them. A plain io.LimitReader ends the answer
// early without a word, and a cut answer then reads as malformed JSON or a missing series.
func bounded(r io.Reader, n int64) io.Reader { return &boundedReader{r: r, left: n, max: n} }

type boundedReader struct {
	r         io.Reader
	left, max int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if k, err := b.r.Read(one[:]); k == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("the answer is larger than %d MiB", b.max>>20)
	}
	p = p[:min(int64(len(p)), b.left)]
	k, err := b.r.Read(p)
	b.left -= int64(k)
	return k, err
}
