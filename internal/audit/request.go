package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unique"
)

// Request is one prompt as the engine sees it: an OpenAI chat request (Messages) or a
// completion request (Prompt), with the session it belongs to when the log says.
type Request struct {
	// Line is the 1-based line of the request in its input.
	Line int64
	// Model is the requested model, empty when absent.
	Model string
	// Chat is true for chat requests (Messages), false for completions (Prompt).
	Chat     bool
	Messages []Message
	Prompt   string
	// PromptIDs holds a completion prompt given as token ids ("prompt": [1, 2, ...]); vLLM
	// hashes them as they are, so they need no tokenizer. Nil for a text prompt.
	PromptIDs []uint32
	// BatchLeft counts the prompts of a batch ("prompt": [...] of several) after the first,
	// which is the one read: each is a request of its own to the engine.
	BatchLeft int
	// Tools is the compact JSON of the request's tools, empty when none; chat templates print
	// tools before the conversation, so they are part of the prefix.
	Tools string
	// Session is the session or conversation id when the request or its export carries one.
	Session string
	// CacheControl counts messages with an Anthropic-style cache_control marker;
	// CacheControlLast is set when the last message carries one (LiteLLM's prompt_caching then
	// never hits, SPEC §6).
	CacheControl     int
	CacheControlLast bool
	// What routers that read the request itself see beyond its prompt (they are kept for the
	// simulator's router emulations). Headers are the request's HTTP headers as an export
	// record holds them (its headers, request_headers or proxy_server_request.headers, or a
	// headers member of the body), names in lower case; nil when the line has none.
	// MetadataSession is the body's metadata.session_id (else the export record's), the field
	// LiteLLM's session_affinity reads.
	Headers         map[string]string
	MetadataSession string
	// SessionParams is the body's session_params.session_id when it is a string, the text vLLM
	// Router routes a chat completion on.
	SessionParams string
	// CacheMessages is the number of messages in LiteLLM prompt_caching's cacheable prefix:
	// up to and including the last message with a cache_control marker of type ephemeral
	// (on the message or on one of its content parts); 0 when no message has one. When the
	// marker is on a content part other than the last, only the parts up to it belong to the
	// prefix: CacheCut is then the length of the last cacheable message's content text up to
	// and including that part (0: the whole message).
	CacheMessages, CacheCut int
	// Partition is the cache partition the body names, "" when none: its cache_salt,
	// extra_key and lora_path members (string values, empty ones counting as absent), each
	// written with its length, so that two requests share a partition exactly when the three
	// agree. Engines keep separate prefix caches per partition; smg's cache_aware keys its
	// trees by it (cache_namespace.rs).
	Partition string
	// Texts are, for a chat, each message's content as the routers that read a request's
	// text see it (MessageText), one per message; nil for a completion.
	Texts []MessageText
	// RawMessages and RawKwargs are the body's messages and chat_template_kwargs as sent,
	// kept only by a reader with KeepRaw: an exact tokenizer needs what the engine rendered
	// (tool calls, tool call ids, images, template switches), not the text the estimate reads.
	RawMessages, RawKwargs json.RawMessage
}

// Message is one chat message with its text content (text parts joined; other parts become a
// short placeholder so that their position still counts).
type Message struct {
	Role    string
	Content string
}

// MessageText is a chat message's content as the routers that read a request's text see it,
// which is not what the engine sees (Message.Content: media as placeholders, tool calls
// appended): each router builds its own text from it (production-stack joins a message's text
// parts with a space and skips a null content, SGLang's gateway joins every text with a space
// and adds an assistant's reasoning_content, Ray concatenates every text member).
type MessageText struct {
	Form ContentForm
	// Parts are, for a string content, the string; for a list, its parts of type "text" (their
	// text member, "" without one) and the parts of other types that have a non-empty text
	// member (input_text, a part without a type), in order. Parts of other types (images,
	// audio) have no text and are not listed.
	Parts []TextPart
	// Reasoning is an assistant message's reasoning_content, "" when absent or not a string.
	Reasoning string
	// Raw is, for a list, the list's JSON as the body holds it (AIBrix's gateway routes on
	// it); "" for other forms.
	Raw string
}

// ContentForm is how a message's content was sent.
type ContentForm uint8

// The forms of a message's content; the zero value is a message without a content member.
const (
	ContentAbsent ContentForm = iota
	ContentNull
	ContentString
	ContentList
)

// TextPart is one text of a message's content (see MessageText.Parts).
type TextPart struct {
	Text string
	// Typed is true for a part of type "text" (and for a string content).
	Typed bool
	// At is where Text starts in the message's Content, -1 when Content does not hold it (a
	// part of another type, which Content shows as a placeholder). Fixer uses it to rewrite
	// the routers' text as it rewrites Content.
	At int
}

// LineError reports a line that is not a usable request. Reading continues after it.
type LineError struct {
	Line int64
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// JoinLineErrors writes the quoted line errors ("line 1: why") with one reason said once for
// the lines it holds for ("lines 1 to 5: why"), as a person reads them, instead of five times.
func JoinLineErrors(errs []string) string {
	type run struct {
		first, last, n int
		why            string
	}
	var runs []run
	var loose []string // quoted errors not of the "line N: why" form, kept as they are
	for _, e := range errs {
		var n int
		var why string
		rest, ok := strings.CutPrefix(e, "line ")
		if num, w, found := strings.Cut(rest, ": "); ok && found {
			if v, err := strconv.Atoi(num); err == nil {
				n, why = v, w
			}
		}
		switch {
		case why == "":
			loose = append(loose, e)
		case len(runs) > 0 && runs[len(runs)-1].why == why:
			r := &runs[len(runs)-1]
			r.last, r.n = n, r.n+1
		default:
			runs = append(runs, run{first: n, last: n, n: 1, why: why})
		}
	}
	out := loose
	for _, r := range runs {
		switch {
		case r.n == 1:
			out = append(out, fmt.Sprintf("line %d: %s", r.first, r.why))
		case r.n == r.last-r.first+1:
			out = append(out, fmt.Sprintf("lines %d to %d: %s", r.first, r.last, r.why))
		default:
			out = append(out, fmt.Sprintf("%d lines from %d to %d: %s", r.n, r.first, r.last, r.why))
		}
	}
	return strings.Join(out, "; ")
}

// ErrLineTooLong is wrapped by a LineError for a line longer than the reader's limit.
var ErrLineTooLong = errors.New("line longer than the limit")

// DefaultMaxLine is the longest line a RequestReader accepts unless told otherwise.
const DefaultMaxLine = 64 << 20

// RequestReader streams requests from JSONL: one OpenAI chat or completion body per line, or a
// gateway export with the body under a key (found on each line and remembered, so a file of
// {"request": {...}} or {"body": "<json string>"} lines costs one extra lookup, not a search).
// Memory is bounded by the longest line (MaxLine).
type RequestReader struct {
	r       *bufio.Reader
	line    int64
	maxLine int
	buf     []byte
	// bodyKey is the key path where the last export line held its body.
	bodyKey []string
	// KeepRaw makes Next keep each chat request's messages and chat_template_kwargs as sent
	// (Request.RawMessages, RawKwargs), at the cost of a second decode of the body.
	KeepRaw bool
}

// NewRequestReader returns a reader over r with lines up to maxLine bytes (DefaultMaxLine when
// maxLine <= 0).
func NewRequestReader(r io.Reader, maxLine int) *RequestReader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &RequestReader{r: bufio.NewReaderSize(r, 256<<10), maxLine: maxLine}
}

// BodyKey reports the key path of the body in a gateway export ("" for plain bodies).
func (rr *RequestReader) BodyKey() string { return strings.Join(rr.bodyKey, ".") }

// Next returns the next request. Blank lines are skipped. At the end it returns io.EOF; for a
// bad line it returns a *LineError and the caller may go on reading.
func (rr *RequestReader) Next() (*Request, error) {
	for {
		line, err := rr.readLine()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		req, perr := rr.parse(line)
		if perr != nil {
			return nil, &LineError{Line: rr.line, Err: perr}
		}
		req.Line = rr.line
		return req, nil
	}
}

// readLine returns the next line without its newline, or a LineError for an overlong line
// (which is skipped).
func (rr *RequestReader) readLine() ([]byte, error) {
	rr.buf = rr.buf[:0]
	tooLong := false
	for {
		chunk, err := rr.r.ReadSlice('\n')
		if !tooLong {
			if len(rr.buf)+len(chunk) > rr.maxLine+1 {
				tooLong = true
				rr.buf = rr.buf[:0]
			} else {
				rr.buf = append(rr.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			rr.line++
			if tooLong {
				return nil, &LineError{Line: rr.line, Err: fmt.Errorf("%w of %d bytes: raise --max-line", ErrLineTooLong, rr.maxLine)}
			}
			return rr.buf[:len(rr.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(rr.buf) == 0 && !tooLong {
				return nil, io.EOF
			}
			rr.line++
			if tooLong {
				return nil, &LineError{Line: rr.line, Err: fmt.Errorf("%w of %d bytes: raise --max-line", ErrLineTooLong, rr.maxLine)}
			}
			return rr.buf, nil
		default:
			return nil, fmt.Errorf("read line %d: %w", rr.line+1, err)
		}
	}
}

// wireBody holds the fields of an OpenAI request body that the audit reads. Messages decode in
// the same pass as the body (one validation of the line, not one per nesting level).
type wireBody struct {
	Model     json.RawMessage `json:"model"`
	Messages  *[]wireMessage  `json:"messages"`
	Prompt    json.RawMessage `json:"prompt"`
	Tools     json.RawMessage `json:"tools"`
	SessionID json.RawMessage `json:"session_id"`
	Metadata  json.RawMessage `json:"metadata"`
	Headers   json.RawMessage `json:"headers"`
	// The cache partition's members (Request.Partition).
	CacheSalt json.RawMessage `json:"cache_salt"`
	ExtraKey  json.RawMessage `json:"extra_key"`
	LoraPath  json.RawMessage `json:"lora_path"`
	// SessionParams is vLLM's and SGLang's session_params object.
	SessionParams json.RawMessage `json:"session_params"`
}

// decodeBody decodes a request body. found is false when data is a valid object with neither
// messages nor prompt (an export record, say). valid says data is known to be valid JSON: it is
// then decoded without encoding/json where fastBody is sure of the result.
func decodeBody(data []byte, valid bool) (b wireBody, found bool, err error) {
	if valid && !slowJSON {
		if b, ok := fastBody(data); ok {
			return b, b.Messages != nil || len(b.Prompt) > 0 && string(b.Prompt) != "null", nil
		}
		b = wireBody{}
	}
	if err := json.Unmarshal(data, &b); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return b, false, fmt.Errorf("invalid JSON: %w", err)
		}
		return b, false, diagnose(data, err)
	}
	return b, b.Messages != nil || len(b.Prompt) > 0 && string(b.Prompt) != "null", nil
}

// diagnose names the field of a body that did not decode.
func diagnose(data []byte, err error) error {
	var loose struct {
		Messages json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(data, &loose) != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	var msgs []json.RawMessage
	if len(loose.Messages) > 0 && json.Unmarshal(loose.Messages, &msgs) != nil {
		return errors.New("messages: want a list of {role, content}")
	}
	for i, raw := range msgs {
		var m wireMessage
		if e := json.Unmarshal(raw, &m); e != nil {
			var ce contentError
			if errors.As(e, &ce) {
				return fmt.Errorf("messages[%d].content: %v", i, ce.err)
			}
			return fmt.Errorf("messages[%d]: %v", i, e)
		}
	}
	return fmt.Errorf("unexpected field type: %w", err)
}

// sessionKeys are the keys that carry a session or conversation id, in an export line, in a
// body's metadata, or in a headers map (LiteLLM, OpenAI metadata, gateway conventions).
var sessionKeys = []string{
	"session_id", "sessionId", "conversation_id", "conversationId", "thread_id",
	"x-session-id", "x-litellm-session-id", "x-litellm-trace-id", "litellm_session_id",
	"litellm_trace_id", "trace_id",
}

func (rr *RequestReader) parse(line []byte) (*Request, error) {
	if reason, ok := skipReason(line); ok {
		// A record of another format that holds no usable request (see Source).
		return nil, errors.New(reason)
	}
	if line[0] != '{' {
		return nil, errors.New("not a JSON object: want one request body (or export record) per line")
	}
	// An export record, told from a body in one validation and one walk (see fastjson.go);
	// what the walk cannot be sure of goes the old way.
	valid := !slowJSON && validJSON(line)
	if valid {
		if outer, body, ok := exportMembers(line); ok && !body {
			raw, err := rr.bodyIn(outer)
			if err != nil {
				return nil, err
			}
			return rr.export(outer, raw)
		}
	}
	b, found, err := decodeBody(line, valid)
	if err != nil {
		return nil, err
	}
	if found {
		rr.bodyKey = nil
		return rr.request(b, line)
	}
	outer, raw, err := rr.findBody(line)
	if err != nil {
		return nil, err
	}
	return rr.export(outer, raw)
}

// export reads the request from the body raw found in the export record outer, with the
// session, headers and metadata session the record holds when the body has none.
func (rr *RequestReader) export(outer map[string]json.RawMessage, raw []byte) (*Request, error) {
	b, _, err := decodeBody(raw, true) // a member of a validated line or map, or a validated string
	if err != nil {
		return nil, fmt.Errorf("body under %q: %w", rr.BodyKey(), err)
	}
	req, err := rr.request(b, raw)
	if err != nil {
		return nil, err
	}
	if req.Session == "" {
		req.Session = sessionFrom(outer)
	}
	if req.Headers == nil {
		req.Headers = headersFrom(outer)
	}
	if req.MetadataSession == "" {
		if m, ok := objectOf(outer["metadata"]); ok {
			req.MetadataSession = stringOrNumber(m["session_id"])
		}
	}
	return req, nil
}

// headersFrom reads the HTTP headers an export record keeps (headers, request_headers,
// proxy_server_request.headers, the first present), names in lower case; nil when none.
func headersFrom(outer map[string]json.RawMessage) map[string]string {
	for _, k := range []string{"headers", "request_headers"} {
		if h := headerMap(outer[k]); h != nil {
			return h
		}
	}
	if psr, ok := objectOf(outer["proxy_server_request"]); ok {
		return headerMap(psr["headers"])
	}
	return nil
}

// headerMap reads a JSON object of headers: values that are strings or numbers, or lists of
// them (the first is kept). Names are lower-cased, as HTTP header names are case-insensitive;
// of two names that differ only in case, the one sorting first wins. Names and values are
// interned (unique.Make): a log repeats the same few headers on every line.
func headerMap(raw json.RawMessage) map[string]string {
	m, ok := objectOf(raw)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := stringOrNumber(m[k])
		if v == "" {
			var list []json.RawMessage
			if json.Unmarshal(m[k], &list) == nil && len(list) > 0 {
				v = stringOrNumber(list[0])
			}
		}
		name := unique.Make(strings.ToLower(k)).Value()
		if _, dup := out[name]; dup {
			continue
		}
		out[name] = unique.Make(v).Value()
	}
	return out
}

// request builds the request from its decoded body and, with KeepRaw, keeps the raw parts an
// exact tokenizer sends on.
func (rr *RequestReader) request(b wireBody, data []byte) (*Request, error) {
	req, err := b.request()
	if err != nil || !rr.KeepRaw || !req.Chat {
		return req, err
	}
	var raw struct {
		Messages json.RawMessage `json:"messages"`
		Kwargs   json.RawMessage `json:"chat_template_kwargs"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	// Copies: data lives in the reader's line buffer, which the next line overwrites.
	req.RawMessages = bytes.Clone(raw.Messages)
	if len(raw.Kwargs) > 0 && string(raw.Kwargs) != "null" {
		req.RawKwargs = bytes.Clone(raw.Kwargs)
	}
	return req, nil
}

// findBody looks for the request body under a key of an export record: first where the last
// record had it, then one and two levels down. A body may also be a JSON string.
func (rr *RequestReader) findBody(line []byte) (map[string]json.RawMessage, []byte, error) {
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(line, &outer); err != nil {
		return nil, nil, fmt.Errorf("invalid JSON: %w", err)
	}
	b, err := rr.bodyIn(outer)
	return outer, b, err
}

// bodyIn looks for the request body in the members of an export record (valid JSON values):
// first where the last record had it, then one and two levels down.
func (rr *RequestReader) bodyIn(outer map[string]json.RawMessage) ([]byte, error) {
	if rr.bodyKey != nil {
		if b, ok := bodyAt(outer, rr.bodyKey); ok {
			return b, nil
		}
	}
	for _, k := range sortedKeys(outer) {
		if b, ok := bodyAt(outer, []string{k}); ok {
			rr.bodyKey = []string{k}
			return b, nil
		}
	}
	for _, k := range sortedKeys(outer) {
		inner, ok := objectOf(outer[k])
		if !ok {
			continue
		}
		for _, k2 := range sortedKeys(inner) {
			if b, ok := bodyAt(inner, []string{k2}); ok {
				rr.bodyKey = []string{k, k2}
				return b, nil
			}
		}
	}
	if _, ok := outer["hash_ids"]; ok {
		// A Mooncake-style trace record: block hashes and lengths, no text.
		return nil, errors.New("a trace record of block hashes (hash_ids), not a request: give the file with --trace (simulate, assess)")
	}
	return nil, errors.New("no request body: want an object with messages or prompt, at the top or under a key")
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Likely body keys first so that a record with several objects picks the request.
	rank := func(k string) int {
		switch strings.ToLower(k) {
		case "body", "request", "request_body", "requestbody", "payload", "input", "data":
			return 0
		}
		return 1
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && (rank(keys[j]) < rank(keys[j-1]) || rank(keys[j]) == rank(keys[j-1]) && keys[j] < keys[j-1]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// asObject decodes raw as an object, also when it is a string holding a JSON object.
func asObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		raw = []byte(strings.TrimSpace(s))
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// bodyAt returns the JSON of the object at path when it has messages or a prompt (an object
// held in a JSON string is unquoted first). m's values must be valid JSON (members of a
// validated line, or of a decoded map).
func bodyAt(m map[string]json.RawMessage, path []string) ([]byte, bool) {
	cur := m
	for i, k := range path {
		raw := bytes.TrimSpace(cur[k])
		quoted := len(raw) > 0 && raw[0] == '"'
		if quoted {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return nil, false
			}
			raw = []byte(strings.TrimSpace(s))
		}
		if i == len(path)-1 && !quoted && !slowJSON {
			// A valid object: its names are enough, without decoding it.
			if len(raw) == 0 || raw[0] != '{' {
				return nil, false
			}
			if has, sure := hasBodyKey(raw); sure {
				if !has {
					return nil, false
				}
				return raw, true
			}
		}
		var obj map[string]json.RawMessage
		var ok bool
		if quoted {
			obj, ok = asObject(raw) // the string's text is not validated yet
		} else {
			obj, ok = objectOf(raw)
		}
		if !ok {
			return nil, false
		}
		if i < len(path)-1 {
			cur = obj
			continue
		}
		if _, ok := obj["messages"]; !ok {
			if _, ok := obj["prompt"]; !ok {
				return nil, false
			}
		}
		return raw, true
	}
	return nil, false
}

// sessionFrom finds a session id among an object's members, its metadata and its headers
// (also any x-<vendor>-session-id header, the convention LiteLLM's session_affinity reads).
func sessionFrom(m map[string]json.RawMessage) string {
	if s := sessionIn(m); s != "" {
		return s
	}
	for _, k := range []string{"metadata", "headers", "request_headers", "proxy_server_request"} {
		if inner, ok := objectOf(m[k]); ok {
			if s := sessionIn(inner); s != "" {
				return s
			}
			if k == "proxy_server_request" {
				if h, ok := objectOf(inner["headers"]); ok {
					if s := sessionIn(h); s != "" {
						return s
					}
				}
			}
		}
	}
	return ""
}

// sessionIn finds a session id among one object's members: a known key, else a header named
// x-<vendor>-session-id (case-insensitive, as HTTP header names are).
func sessionIn(m map[string]json.RawMessage) string {
	for _, k := range sessionKeys {
		if s := stringOrNumber(m[k]); s != "" {
			return s
		}
	}
	var keys []string
	for k := range m {
		if l := strings.ToLower(k); len(l) > len("x--session-id") && strings.HasPrefix(l, "x-") && strings.HasSuffix(l, "-session-id") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // one answer whatever the map's order
	for _, k := range keys {
		if s := stringOrNumber(m[k]); s != "" {
			return s
		}
	}
	return ""
}

func stringOrNumber(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

type wireMessage struct {
	Role         string          `json:"role"`
	Content      wireContent     `json:"content"`
	CacheControl json.RawMessage `json:"cache_control"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	// Reasoning is kept raw: a value that is not a string is no reason to refuse the line.
	Reasoning json.RawMessage `json:"reasoning_content"`
}

// wireContent is a message content decoded in place: a string, null, or a list of parts.
// marked is set when a part has a cache_control marker; ephemeral when one of type ephemeral,
// and ephemeralCut is then the length of the text up to and including the last such part, 0
// when it is the last part.
type wireContent contentRead

type contentError struct{ err error }

func (e contentError) Error() string { return "content: " + e.err.Error() }

// UnmarshalJSON reads the content; a string without escapes is taken as is, since the
// surrounding decode has already validated it.
func (c *wireContent) UnmarshalJSON(raw []byte) error {
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		c.text, c.form = string(raw[1:len(raw)-1]), ContentString
		return nil
	}
	p, err := contentParts(raw)
	if err != nil {
		return contentError{err}
	}
	*c = wireContent(p)
	return nil
}

type wirePart struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	CacheControl json.RawMessage `json:"cache_control"`
	// The payloads of media parts: their hash goes into the placeholder, since the engine
	// hashes the item too (SPEC 2.3) and two images never share blocks.
	ImageURL   json.RawMessage `json:"image_url"`
	InputAudio json.RawMessage `json:"input_audio"`
	VideoURL   json.RawMessage `json:"video_url"`
	File       json.RawMessage `json:"file"`
}

func (b wireBody) request() (*Request, error) {
	req := &Request{Model: stringOrNumber(b.Model)}
	if len(b.Tools) > 0 && string(b.Tools) != "null" {
		var buf bytes.Buffer
		if err := json.Compact(&buf, b.Tools); err == nil {
			req.Tools = buf.String()
		}
	}
	req.Session = stringOrNumber(b.SessionID)
	if len(b.Metadata) > 0 {
		if m, ok := objectOf(b.Metadata); ok {
			if req.Session == "" {
				req.Session = sessionFrom(m)
			}
			req.MetadataSession = stringOrNumber(m["session_id"])
		}
	}
	if len(b.Headers) > 0 {
		req.Headers = headerMap(b.Headers)
	}
	req.Partition = partition(b.CacheSalt, b.ExtraKey, b.LoraPath)
	if m, ok := objectOf(b.SessionParams); ok {
		if id, ok := m["session_id"]; ok && len(id) > 0 && id[0] == '"' {
			_ = json.Unmarshal(id, &req.SessionParams)
		}
	}
	switch {
	case b.Messages != nil && len(*b.Messages) == 0 && (len(b.Prompt) == 0 || string(b.Prompt) == "null"):
		// The server refuses a chat of no message (400): it never reached the engine.
		return nil, errors.New("messages: an empty list, which the server refuses")
	case b.Messages != nil:
		req.Chat = true
		msgs := *b.Messages
		req.Messages = make([]Message, len(msgs))
		req.Texts = make([]MessageText, len(msgs))
		for i, m := range msgs {
			req.Texts[i] = m.routerText()
			text := m.Content.text
			if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
				var buf bytes.Buffer
				if json.Compact(&buf, m.ToolCalls) == nil {
					text += buf.String()
				}
			}
			if m.Content.marked || (len(m.CacheControl) > 0 && string(m.CacheControl) != "null") {
				req.CacheControl++
				if i == len(msgs)-1 {
					req.CacheControlLast = true
				}
			}
			// LiteLLM's prefix: a message-level marker takes the whole message, a marker on
			// a content part the parts up to it (the later of the two when both are there,
			// as LiteLLM reads the message's own marker first, then its parts).
			if ephemeral(m.CacheControl) {
				req.CacheMessages, req.CacheCut = i+1, 0
			}
			if m.Content.ephemeral {
				req.CacheMessages, req.CacheCut = i+1, m.Content.ephemeralCut
			}
			req.Messages[i] = Message{Role: m.Role, Content: text}
		}
	case len(b.Prompt) > 0 && string(b.Prompt) != "null":
		var s string
		if err := json.Unmarshal(b.Prompt, &s); err == nil {
			req.Prompt = s
			break
		}
		var list []string
		if err := json.Unmarshal(b.Prompt, &list); err == nil && len(list) > 0 {
			// A batch of prompts: the audit reads the first, and counts the rest.
			req.Prompt, req.BatchLeft = list[0], len(list)-1
			break
		}
		ids, left, err := promptIDs(b.Prompt)
		if err != nil {
			return nil, err
		}
		req.PromptIDs, req.BatchLeft = ids, left
	default:
		return nil, errors.New("no messages and no prompt")
	}
	// OpenAI's user field names the end user, not a conversation: one user talks to several
	// assistants and opens many conversations, so it is never a session (sessions come from
	// conversation ids, or from conversation continuity in the analysis).
	return req, nil
}

// promptIDs reads a prompt of token ids: a list of ids, or a batch of such lists (the first
// is read, as for a batch of strings, and left counts the others).
func promptIDs(raw json.RawMessage) (ids32 []uint32, left int, err error) {
	var ids []int64
	if err := json.Unmarshal(raw, &ids); err != nil {
		var batch [][]int64
		if err := json.Unmarshal(raw, &batch); err != nil || len(batch) == 0 {
			return nil, 0, errors.New("prompt: want a string, a list of strings, or token ids (a list of integers or a list of such lists)")
		}
		ids, left = batch[0], len(batch)-1
	}
	out := make([]uint32, len(ids))
	for i, id := range ids {
		if id < 0 || id > 1<<32-1 {
			return nil, 0, fmt.Errorf("prompt: token id %d at index %d is out of range", id, i)
		}
		out[i] = uint32(id)
	}
	return out, left, nil
}

// ephemeral reports whether a cache_control value is an object of type "ephemeral", the only
// marker LiteLLM's prompt_caching reads.
func ephemeral(raw json.RawMessage) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	var cc struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(raw, &cc) == nil && cc.Type == "ephemeral"
}

// routerText is the message as the routers that read text see it (MessageText).
func (m *wireMessage) routerText() MessageText {
	t := MessageText{Form: m.Content.form, Parts: m.Content.parts, Raw: m.Content.raw}
	if t.Form == ContentString {
		t.Parts = []TextPart{{Text: m.Content.text, Typed: true}}
	}
	if m.Role == "assistant" && len(m.Reasoning) > 0 && m.Reasoning[0] == '"' {
		t.Reasoning, _ = fastString(m.Reasoning)
	}
	return t
}

// partition writes a request's cache partition members (Request.Partition): each present as
// its length and value, absent as "-"; "" when all are absent. A member that is not a
// non-empty string is absent (the engines and smg treat an empty one as unset).
func partition(members ...json.RawMessage) string {
	var sb strings.Builder
	set := false
	for _, raw := range members {
		s := ""
		if len(raw) > 0 && raw[0] == '"' {
			s, _ = fastString(raw)
		}
		if s == "" {
			sb.WriteString("-")
			continue
		}
		set = true
		fmt.Fprintf(&sb, "%d:%s", len(s), s)
	}
	if !set {
		return ""
	}
	return sb.String()
}

// contentRead is a message content read by contentParts (see wireContent): its text as the
// engine's estimate reads it, its form, and for a list its parts as routers read them.
type contentRead struct {
	text         string
	raw          string // a list's JSON
	form         ContentForm
	parts        []TextPart
	marked       bool
	ephemeral    bool
	ephemeralCut int
}

// contentParts reads a message content: a string, null, or a list of parts.
func contentParts(raw json.RawMessage) (contentRead, error) {
	var out contentRead
	if len(raw) == 0 || string(raw) == "null" {
		out.form = ContentNull
		return out, nil
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &out.text); err != nil {
			return out, err
		}
		out.form = ContentString
		return out, nil
	}
	out.form = ContentList
	// The parts are decoded one at a time: a list of a million parts held as structs took
	// about 150 bytes a part on top of the line.
	bad := errors.New("want a string or a list of parts")
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return out, bad
	}
	var sb strings.Builder
	for dec.More() {
		var p wirePart
		if err := dec.Decode(&p); err != nil {
			return out, bad
		}
		last := !dec.More()
		if len(p.CacheControl) > 0 && string(p.CacheControl) != "null" {
			out.marked = true
		}
		switch p.Type {
		case "text", "input_text", "":
			if p.Type == "text" || p.Text != "" {
				out.parts = append(out.parts, TextPart{Text: p.Text, Typed: p.Type == "text", At: sb.Len()})
			}
			sb.WriteString(p.Text)
		default:
			if p.Text != "" {
				out.parts = append(out.parts, TextPart{Text: p.Text, At: -1})
			}
			sb.WriteString("<" + p.Type)
			if payload := slices.Concat(p.ImageURL, p.InputAudio, p.VideoURL, p.File); len(payload) > 0 {
				h := fnv.New32a()
				h.Write(payload)
				fmt.Fprintf(&sb, ":%08x", h.Sum32())
			}
			sb.WriteString(">")
		}
		if ephemeral(p.CacheControl) {
			out.ephemeral, out.ephemeralCut = true, sb.Len()
			if last {
				out.ephemeralCut = 0
			}
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim(']') {
		return out, bad
	}
	out.text = sb.String()
	out.raw = string(raw)
	for i, p := range out.parts {
		if p.At >= 0 { // share the text's memory rather than hold each part twice
			out.parts[i].Text = out.text[p.At : p.At+len(p.Text)]
		}
	}
	return out, nil
}
