package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// TokenizeOptions configures the emulated /tokenize endpoint.
type TokenizeOptions struct {
	// Model is the served model name; a request naming another model is rejected as vLLM does.
	// Empty accepts any model.
	Model string
	// MaxModelLen is reported in every response and bounds the token count (default 8192).
	MaxModelLen int
	// DateLine makes the chat template print "Today Date: <date>" in the system header, as the
	// Llama 3.1 templates do. The date comes from chat_template_kwargs.date_string when the
	// request passes it, otherwise from Now.
	DateLine bool
	// ClockOnly makes the date line ignore chat_template_kwargs, as templates that call
	// strftime_now themselves do (Mistral's); only the clock moves it.
	ClockOnly bool
	// Now is the template's clock (default time.Now); tests inject one to prove what a date
	// line does to the token ids.
	Now func() time.Time
	// MaxBodyBytes bounds a request body (default 8 MiB).
	MaxBodyBytes int64
}

// The special tokens of the Llama-3-style toy template, with their fixed ids.
var tokSpecials = []string{
	"<|begin_of_text|>",
	"<|end_of_text|>",
	"<|start_header_id|>",
	"<|end_header_id|>",
	"<|eot_id|>",
}

const (
	tokSpecialBase = 128000
	tokBOS         = "<|begin_of_text|>"
	tokDefaultLen  = 8192
	tokDefaultBody = 8 << 20
)

// tokRequest is the union of vLLM's two /tokenize request forms.
type tokRequest struct {
	Model               string          `json:"model"`
	Prompt              *string         `json:"prompt"`
	Messages            []tokMessage    `json:"messages"`
	AddSpecialTokens    *bool           `json:"add_special_tokens"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
	ChatTemplate        *string         `json:"chat_template"`
	ChatTemplateKwargs  map[string]any  `json:"chat_template_kwargs"`
	Tools               json.RawMessage `json:"tools"`
	ReturnTokenStrs     *bool           `json:"return_token_strs"`
}

type tokMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []tokToolCall   `json:"tool_calls"`
}

// tokToolCall is an OpenAI tool call of an assistant message.
type tokToolCall struct {
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type tokResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int    `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

type tokErrorBody struct {
	Error tokErrorDetail `json:"error"`
}

type tokErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// TokenizeHandler serves vLLM's POST /tokenize with a deterministic toy tokenizer and a
// Llama-3-style chat template. It accepts both request forms (prompt and messages) and answers
// errors in vLLM's {error: {message, type, param, code}} shape. Identical text always gives
// identical ids, so block chains computed from its output behave like a real engine's.
func TokenizeHandler(opts TokenizeOptions) http.Handler {
	if opts.MaxModelLen <= 0 {
		opts.MaxModelLen = tokDefaultLen
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = tokDefaultBody
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			tokWriteError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "method "+r.Method+" not allowed: use POST")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, opts.MaxBodyBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				tokWriteError(w, http.StatusRequestEntityTooLarge, "BadRequestError", fmt.Sprintf("request body larger than %d bytes", mbe.Limit))
				return
			}
			tokWriteError(w, http.StatusBadRequest, "BadRequestError", "read request body: "+err.Error())
			return
		}
		var req tokRequest
		if err := json.Unmarshal(body, &req); err != nil {
			tokWriteError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
			return
		}
		if opts.Model != "" && req.Model != "" && req.Model != opts.Model {
			tokWriteError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model))
			return
		}
		text, err := tokRender(&req, opts)
		if err != nil {
			tokWriteError(w, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
		strs := tokSplit(text)
		if len(strs) > opts.MaxModelLen {
			tokWriteError(w, http.StatusBadRequest, "BadRequestError",
				fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens.", opts.MaxModelLen, len(strs)))
			return
		}
		resp := tokResponse{Count: len(strs), MaxModelLen: opts.MaxModelLen, Tokens: make([]int, len(strs)), TokenStrs: strs}
		for i, s := range strs {
			resp.Tokens[i] = tokID(s)
		}
		if req.ReturnTokenStrs != nil && !*req.ReturnTokenStrs {
			resp.TokenStrs = nil
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	})
}

func tokWriteError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(tokErrorBody{Error: tokErrorDetail{Message: msg, Type: typ, Code: status}})
}

// tokRender turns a request into the text the engine would tokenize.
func tokRender(req *tokRequest, opts TokenizeOptions) (string, error) {
	switch {
	case req.Prompt != nil && req.Messages != nil:
		return "", errors.New("give either prompt or messages, not both")
	case req.Prompt != nil:
		// The prompt form adds the BOS token by default, as vLLM's completion path does.
		if req.AddSpecialTokens == nil || *req.AddSpecialTokens {
			return tokBOS + *req.Prompt, nil
		}
		return *req.Prompt, nil
	case req.Messages != nil:
		if req.ChatTemplate != nil {
			return "", errors.New("this server cannot apply a chat_template given in the request; omit it to use the model's template")
		}
		return tokChat(req, opts)
	}
	return "", errors.New("missing field: give prompt (a string) or messages (a list)")
}

// tokChat applies the Llama-3-style template: the system header always comes first (with the
// date line when enabled), then each message, then the assistant header unless the caller
// turns the generation prompt off.
func tokChat(req *tokRequest, opts TokenizeOptions) (string, error) {
	var b strings.Builder
	b.WriteString(tokBOS)
	msgs := req.Messages
	system := ""
	if len(msgs) > 0 && msgs[0].Role == "system" {
		s, err := tokContent(msgs[0].Content, 0)
		if err != nil {
			return "", err
		}
		system = strings.TrimSpace(s)
		msgs = msgs[1:]
	}
	b.WriteString("<|start_header_id|>system<|end_header_id|>\n\n")
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		b.WriteString("Environment: ipython\n")
	}
	if opts.DateLine {
		date := opts.Now().Format("02 Jan 2006")
		if v, ok := req.ChatTemplateKwargs["date_string"].(string); ok && !opts.ClockOnly {
			date = v
		}
		b.WriteString("Cutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n")
	}
	b.WriteString(system)
	b.WriteString("<|eot_id|>")
	for i, m := range msgs {
		if m.Role == "" {
			return "", fmt.Errorf("messages[%d]: missing role", i)
		}
		s, err := tokContent(m.Content, i)
		if err != nil {
			return "", err
		}
		b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n")
		b.WriteString(strings.TrimSpace(s))
		// Tool calls the Llama 3.1 way: one JSON object per call after the content, the
		// arguments (a JSON string in OpenAI's format) unquoted.
		for _, tc := range m.ToolCalls {
			args := tc.Function.Arguments
			var str string
			if json.Unmarshal(args, &str) == nil {
				args = json.RawMessage(str)
			}
			name, _ := json.Marshal(tc.Function.Name)
			b.WriteString(`{"name": ` + string(name) + `, "parameters": ` + string(args) + "}")
		}
		b.WriteString("<|eot_id|>")
	}
	if req.AddGenerationPrompt == nil || *req.AddGenerationPrompt {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return b.String(), nil
}

// tokContent reads a message content: a string, null, or a list of parts of which the text
// parts count.
func tokContent(raw json.RawMessage, i int) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("messages[%d].content: want a string or a list of parts", i)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// tokSplit cuts text into toy tokens: special tokens whole; otherwise a word with its leading
// space, digits in groups of at most three, a run of newlines, a run of spaces, or a single
// other character. The shapes follow Llama 3's pre-tokenizer closely enough that token
// positions land near the real ones.
func tokSplit(text string) []string {
	var out []string
	for len(text) > 0 {
		if text[0] == '<' {
			if sp := tokSpecialAt(text); sp != "" {
				out = append(out, sp)
				text = text[len(sp):]
				continue
			}
		}
		n := tokPieceLen(text)
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

func tokSpecialAt(text string) string {
	for _, sp := range tokSpecials {
		if strings.HasPrefix(text, sp) {
			return sp
		}
	}
	return ""
}

// tokPieceLen returns the byte length of the ordinary token at the start of text.
func tokPieceLen(text string) int {
	i := 0
	if text[0] == ' ' && len(text) > 1 {
		r, _ := utf8.DecodeRuneInString(text[1:])
		if unicode.IsLetter(r) {
			i = 1
		}
	}
	r, size := utf8.DecodeRuneInString(text[i:])
	switch {
	case unicode.IsLetter(r):
		j := i + size
		for j < len(text) {
			r, s := utf8.DecodeRuneInString(text[j:])
			if !unicode.IsLetter(r) || j-i >= 12 {
				break
			}
			j += s
		}
		return j
	case r >= '0' && r <= '9':
		j := i + 1
		for j < len(text) && j-i < 3 && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		return j
	case r == '\n' || r == ' ':
		j := i + 1
		for j < len(text) && text[j] == byte(r) {
			j++
		}
		return j
	}
	return i + size
}

// tokID maps a token string to its id: specials have fixed ids, others a hash below them.
func tokID(s string) int {
	for i, sp := range tokSpecials {
		if s == sp {
			return tokSpecialBase + i
		}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return int(h.Sum32()%(tokSpecialBase-256)) + 256
}
