package audit

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/vllm"
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
	// Sized once: a long prompt grown by doubling leaves its smaller copies behind, as much
	// garbage as the prompt itself.
	n := len(req.Prompt)
	if req.Tools != "" {
		n += len("<|tools|>\n") + len(req.Tools)
	}
	for _, m := range req.Messages {
		n += len("<||>\n\n") + len(m.Role) + len(m.Content)
	}
	b.Grow(n)
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

// EstimateIDs appends the pseudo-token ids of text to dst, growing it once to the size they
// need (ceil(len/4)): a long prompt's ids grown by appending left their smaller copies behind.
func EstimateIDs(text string, dst []uint32) []uint32 {
	dst = slices.Grow(dst, (len(text)+BytesPerToken-1)/BytesPerToken)
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

// vllm is the server's client.
func (s *Server) vllm() *vllm.Client { return &vllm.Client{BaseURL: s.BaseURL, HTTP: s.Client} }

// Shown is the server's address as it may be shown: without the password of its userinfo.
func (s *Server) Shown() string { return s.vllm().Shown() }

type wireOut struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Tokenize sends the request to /tokenize and returns the server's ids.
func (s *Server) Tokenize(ctx context.Context, req *Request) (Tokens, error) {
	body := vllm.TokenizeRequest{Model: s.Model}
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
	ids, _, err := s.vllm().Tokenize(ctx, body)
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
	body := vllm.TokenizeRequest{Model: s.Model, AddGenerationPrompt: &t, ChatTemplate: chatTemplate, ReturnTokenStrs: &t}
	var err error
	if body.Messages, err = outMessages(msgs); err != nil {
		return nil, nil, err
	}
	if len(kwargs) > 0 {
		if body.ChatTemplateKwargs, err = json.Marshal(kwargs); err != nil {
			return nil, nil, fmt.Errorf("encode chat_template_kwargs: %w", err)
		}
	}
	return s.vllm().Tokenize(ctx, body)
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

// Remote is a vLLM server set up for exact tokens: the one set-up audit, simulate and assess
// share for --tokenize.
type Remote struct {
	Server *Server
	// Config is the server's cache configuration; zero when its /metrics has none.
	Config vllm.CacheConfig
	// BlockSize is the server's block size, or the fallback Connect was given when the
	// server's /metrics does not say (then Assumed is set).
	BlockSize int
	Assumed   bool
	// CachingOff is the prefix-caching-off finding when the server runs with it off.
	CachingOff *finding.Finding
}

// BlockSizeNote says where the block size came from, for a report's notes.
func (r Remote) BlockSizeNote() string {
	if r.Assumed {
		return fmt.Sprintf("block size: %d assumed: %s/metrics has no vllm:cache_config_info", r.BlockSize, r.Server.Shown())
	}
	return fmt.Sprintf("block size: %d, from %s/metrics (vllm:cache_config_info)", r.BlockSize, r.Server.Shown())
}

// Connect sets up tokenizing through the server at url: it reads the block size and the
// prefix-caching setting from its /metrics. A server whose /metrics has no
// vllm:cache_config_info is used with fallback as the block size (Assumed); one that cannot
// be read at all is an error saying what to do.
func Connect(ctx context.Context, url, model string, timeout time.Duration, fallback int) (Remote, error) {
	s := &Server{BaseURL: url, Model: model, Client: &http.Client{Timeout: timeout}}
	r := Remote{Server: s, BlockSize: fallback}
	cc, err := s.vllm().CacheConfig(ctx)
	switch {
	case errors.Is(err, vllm.ErrNoCacheConfig):
		r.Assumed = true
		return r, nil
	case err != nil:
		return Remote{}, fmt.Errorf("read the block size: %w (check --tokenize, or leave it out to estimate tokens)", err)
	}
	r.Config, r.BlockSize = cc, cc.BlockSize
	if cc.CachingOff() {
		f := vllm.CachingOff(s.Shown())
		r.CachingOff = &f
	}
	return r, nil
}
