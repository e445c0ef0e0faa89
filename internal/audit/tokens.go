package audit

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Tokens is a tokenized prompt. Exact is true when the ids come from the serving engine's own
// tokenizer and chat template (vLLM's /tokenize); false for the byte estimate, and every figure
// derived from estimated tokens must say so.
type Tokens struct {
	IDs   []uint32
	Exact bool
}

// Tokenizer turns a request into the token ids the engine would hash.
type Tokenizer interface {
	Tokenize(ctx context.Context, req *Request) (Tokens, error)
	// Exact reports whether the ids are the engine's own.
	Exact() bool
}

// BytesPerToken is the estimate's ratio: one pseudo-token per 4 bytes of rendered text, the
// usual rule of thumb for English BPE vocabularies (3.5-4.5 bytes per token) and the ratio
// llm-d's estimating tokenizer uses.
const BytesPerToken = 4

// EstimateTokens returns the estimated token count of n bytes of text.
func EstimateTokens(n int) int { return (n + BytesPerToken - 1) / BytesPerToken }

// Layout is a request rendered for the estimate: the text and where each message's content
// starts in it, so that a byte offset can be traced back to a message.
type Layout struct {
	Text string
	// Starts[i] is the byte offset of message i's content (one entry for a completion).
	Starts []int
	// Roles[i] is message i's role ("prompt" for a completion).
	Roles []string
	// ToolsStart and ToolsEnd bound the tools section (both 0 when there are no tools).
	ToolsStart, ToolsEnd int
	// IDs is set when Text packs a token-id prompt, BytesPerToken bytes an id, so that the
	// estimate reads back exactly the ids the engine hashes.
	IDs bool
}

// Render lays a request out the way chat templates do in general: a leading system (or
// developer) message first, then the tools (Qwen, Hermes and Llama 3.2 print them after the
// system text, Llama 3.1 and Mistral later still, none before it), then each other message
// behind a role marker. The markers are not any model's, but they are the same for every
// request, so equal conversations render equally and differences stay where they are.
func Render(req *Request) Layout {
	var b strings.Builder
	var l Layout
	if !req.Chat && req.PromptIDs != nil {
		// Completions carry no tools, and nothing may shift the ids off their 4-byte slots.
		l = Layout{Starts: []int{0}, Roles: []string{"prompt"}, IDs: true}
		b.Grow(len(req.PromptIDs) * BytesPerToken)
		var w [BytesPerToken]byte
		for _, id := range req.PromptIDs {
			binary.LittleEndian.PutUint32(w[:], id)
			b.Write(w[:])
		}
		l.Text = b.String()
		return l
	}
	tools := func() {
		if req.Tools != "" {
			l.ToolsStart = b.Len()
			b.WriteString("<|tools|>")
			b.WriteString(req.Tools)
			b.WriteString("\n")
			l.ToolsEnd = b.Len()
		}
	}
	if !req.Chat {
		tools()
		l.Starts = []int{b.Len()}
		l.Roles = []string{"prompt"}
		b.WriteString(req.Prompt)
		l.Text = b.String()
		return l
	}
	l.Starts = make([]int, len(req.Messages))
	l.Roles = make([]string, len(req.Messages))
	lead := len(req.Messages) > 0 && (req.Messages[0].Role == "system" || req.Messages[0].Role == "developer")
	if !lead {
		tools()
	}
	for i, m := range req.Messages {
		if i == 1 && lead {
			tools()
		}
		b.WriteString("<|")
		b.WriteString(m.Role)
		b.WriteString("|>\n")
		l.Starts[i] = b.Len()
		l.Roles[i] = m.Role
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	if lead && len(req.Messages) == 1 {
		tools()
	}
	l.Text = b.String()
	return l
}

// Locate returns the message holding byte offset off and the offset within its content
// (-1 for the tools section or a role marker before the first message; the offset is then
// from the section's start).
func (l Layout) Locate(off int) (msg, within int) {
	if l.ToolsEnd > 0 && off >= l.ToolsStart && off < l.ToolsEnd {
		return -1, off - l.ToolsStart
	}
	msg = -1
	for i, s := range l.Starts {
		if s <= off {
			msg = i
		}
	}
	if msg < 0 {
		return -1, off
	}
	return msg, off - l.Starts[msg]
}

// Estimator is the tokenizer used without a server: deterministic pseudo-token ids, one per
// BytesPerToken bytes of the rendered text (the bytes themselves, little-endian), so identical
// text gives identical ids and blocks and text that differs gives different ids from the first
// differing byte on.
type Estimator struct{}

// Exact reports false: estimated ids are not the engine's.
func (Estimator) Exact() bool { return false }

// Tokenize renders req and estimates its ids.
func (Estimator) Tokenize(_ context.Context, req *Request) (Tokens, error) {
	return Tokens{IDs: EstimateIDs(Render(req).Text, nil)}, nil
}

// EstimateIDs appends the pseudo-token ids of text to dst.
func EstimateIDs(text string, dst []uint32) []uint32 {
	for len(text) >= BytesPerToken {
		dst = append(dst, binary.LittleEndian.Uint32([]byte(text[:BytesPerToken])))
		text = text[BytesPerToken:]
	}
	if len(text) > 0 {
		var last [BytesPerToken]byte
		copy(last[:], text)
		dst = append(dst, binary.LittleEndian.Uint32(last[:]))
	}
	return dst
}

// Server tokenizes through a vLLM server's POST /tokenize with the request's messages, so the
// server applies the model's real chat template and the ids are exactly what the engine hashes.
type Server struct {
	// BaseURL is the server's address, e.g. http://127.0.0.1:8000.
	BaseURL string
	Client  *http.Client
	// Model is sent with every request when set (required by servers with several models).
	Model string
}

// Exact reports true: the ids are the engine's own.
func (*Server) Exact() bool { return true }

type tokenizeRequest struct {
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

type wireOut struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type tokenizeResponse struct {
	Count     int      `json:"count"`
	Tokens    []int64  `json:"tokens"`
	TokenStrs []string `json:"token_strs"`
}

// Tokenize sends the request to /tokenize and returns the server's ids.
func (s *Server) Tokenize(ctx context.Context, req *Request) (Tokens, error) {
	body := tokenizeRequest{Model: s.Model}
	if s.Model == "" {
		body.Model = req.Model
	}
	if req.Chat {
		t := true
		body.AddGenerationPrompt = &t
		// The messages as the request sent them, when the reader kept them: the chat template
		// renders tool calls, tool call ids and images its own way.
		body.Messages, body.ChatTemplateKwargs = req.RawMessages, req.RawKwargs
		if len(body.Messages) == 0 {
			var err error
			if body.Messages, err = outMessages(req.Messages); err != nil {
				return Tokens{}, err
			}
		}
		if req.Tools != "" {
			body.Tools = json.RawMessage(req.Tools)
		}
	} else {
		if req.PromptIDs != nil {
			// vLLM takes a token-id prompt as it is: these are the ids it hashes.
			return Tokens{IDs: req.PromptIDs, Exact: true}, nil
		}
		p := req.Prompt
		body.Prompt = &p
	}
	ids, _, err := s.post(ctx, body)
	if err != nil {
		return Tokens{}, err
	}
	return Tokens{IDs: ids, Exact: true}, nil
}

// TokenizeMessages tokenizes a conversation with extra chat-template arguments (used to render
// the same conversation with two clock values), through the given chat template when it is not
// empty (vLLM accepts one only when started with --trust-request-chat-template).
func (s *Server) TokenizeMessages(ctx context.Context, msgs []Message, chatTemplate string, kwargs map[string]any) ([]uint32, []string, error) {
	t := true
	body := tokenizeRequest{Model: s.Model, AddGenerationPrompt: &t, ChatTemplate: chatTemplate, ReturnTokenStrs: &t}
	var err error
	if body.Messages, err = outMessages(msgs); err != nil {
		return nil, nil, err
	}
	if len(kwargs) > 0 {
		if body.ChatTemplateKwargs, err = json.Marshal(kwargs); err != nil {
			return nil, nil, fmt.Errorf("encode chat_template_kwargs: %w", err)
		}
	}
	return s.post(ctx, body)
}

// outMessages encodes messages as {role, content} for /tokenize.
func outMessages(msgs []Message) (json.RawMessage, error) {
	out := make([]wireOut, len(msgs))
	for i, m := range msgs {
		out[i] = wireOut(m)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode messages: %w", err)
	}
	return b, nil
}

func (s *Server) client() *http.Client {
	if s.Client != nil {
		return s.Client
	}
	return http.DefaultClient
}

// Shown is the server's address as it may be shown: without the password of its userinfo.
func (s *Server) Shown() string {
	u, err := neturl.Parse(s.BaseURL)
	if err != nil || u.User == nil {
		return s.BaseURL
	}
	return u.Redacted()
}

func (s *Server) post(ctx context.Context, body tokenizeRequest) ([]uint32, []string, error) {
	endpoint := strings.TrimRight(s.BaseURL, "/") + "/tokenize"
	url := strings.TrimRight(s.Shown(), "/") + "/tokenize" // for messages
	buf, err := json.Marshal(body)
	if err != nil {
		return nil, nil, fmt.Errorf("encode tokenize request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(buf))
	if err != nil {
		return nil, nil, fmt.Errorf("tokenize %s: %w", url, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := s.client().Do(hreq)
	if err != nil {
		return nil, nil, fmt.Errorf("tokenize %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
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
// malformed); the audit skips that request and goes on.
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

// CacheConfig is what a server's vllm:cache_config_info says about its prefix cache.
type CacheConfig struct {
	BlockSize          int
	PrefixCaching      bool
	PrefixCachingKnown bool
	HashAlgo           string
}

// ErrNoCacheConfig is returned when /metrics has no vllm:cache_config_info series.
var ErrNoCacheConfig = errors.New("no vllm:cache_config_info in /metrics")

// CacheConfig reads the block size and prefix-caching setting from the server's /metrics.
func (s *Server) CacheConfig(ctx context.Context) (CacheConfig, error) {
	url := strings.TrimRight(s.Shown(), "/") + "/metrics" // for messages
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(s.BaseURL, "/")+"/metrics", nil)
	if err != nil {
		return CacheConfig{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	hreq.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client().Do(hreq)
	if err != nil {
		return CacheConfig{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return CacheConfig{}, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	return ParseCacheConfig(io.LimitReader(resp.Body, 64<<20))
}

// ParseCacheConfig reads vllm:cache_config_info from a Prometheus text exposition.
func ParseCacheConfig(r io.Reader) (CacheConfig, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return CacheConfig{}, fmt.Errorf("parse metrics: %w", err)
	}
	fam, ok := fams["vllm:cache_config_info"]
	if !ok || len(fam.GetMetric()) == 0 {
		return CacheConfig{}, ErrNoCacheConfig
	}
	var cc CacheConfig
	for _, lp := range fam.GetMetric()[0].GetLabel() {
		switch lp.GetName() {
		case "block_size":
			n, err := strconv.Atoi(lp.GetValue())
			if err != nil || n <= 0 {
				return CacheConfig{}, fmt.Errorf("vllm:cache_config_info: block_size %q is not a positive integer", lp.GetValue())
			}
			cc.BlockSize = n
		case "enable_prefix_caching":
			cc.PrefixCachingKnown = true
			cc.PrefixCaching = strings.EqualFold(lp.GetValue(), "true")
		case "prefix_caching_hash_algo":
			cc.HashAlgo = lp.GetValue()
		}
	}
	if cc.BlockSize == 0 {
		return CacheConfig{}, errors.New("vllm:cache_config_info has no block_size label")
	}
	return cc, nil
}
