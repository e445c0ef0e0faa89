package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"strings"
)

// OpenTelemetry GenAI spans as OTLP JSON: what the collector's file exporter writes (one
// ExportTraceServiceRequest a line: {"resourceSpans": [{"resource", "scopeSpans": [{"spans":
// [...]}]}]}), or one such document. A model call is a span with GenAI attributes; its prompt
// is read from the first of, newest convention first (open-telemetry/semantic-conventions,
// docs/gen-ai/gen-ai-spans.md and gen-ai-events.md):
//   - gen_ai.input.messages (with gen_ai.system_instructions before it), on the span or on its
//     gen_ai.client.inference.operation.details event: messages of parts ({type: text,
//     content}, tool_call, tool_call_response, blob, uri, file);
//   - the per-message events of the previous conventions: gen_ai.system.message,
//     gen_ai.user.message, gen_ai.assistant.message, gen_ai.tool.message (content attribute);
//   - the gen_ai.content.prompt event's gen_ai.prompt attribute (the first conventions);
//   - gen_ai.prompt.<i>.role and gen_ai.prompt.<i>.content attributes (OpenLLMetry).
// The session is gen_ai.conversation.id, else session.id (on the span, else on its resource);
// the arrival is startTimeUnixNano; the output length gen_ai.usage.output_tokens (earlier
// gen_ai.usage.completion_tokens); max tokens gen_ai.request.max_tokens; the tools
// gen_ai.tool.definitions. Content is recorded only when the instrumentation is told to
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).

// captureContent is what to turn on for GenAI instrumentations to record prompts.
const captureContent = "turn content capture on in the instrumentation (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; SPAN_AND_EVENT or SPAN_ONLY in the newest ones, which record gen_ai.input.messages) and export again"

type otlp struct {
	vs    *valueStream
	queue [][]byte

	batches, spans, genai, used, noContent, tooLong int64
	withSession, withOutput, fromOld                int64
}

func newOTLP(vs *valueStream) *otlp { return &otlp{vs: vs} }

func (c *otlp) next() ([]byte, error) {
	for {
		if len(c.queue) > 0 {
			line := c.queue[0]
			c.queue = c.queue[1:]
			return line, nil
		}
		v, err := c.vs.next()
		var tl *tooLongError
		if errors.As(err, &tl) {
			c.tooLong++
			return skipLine(tl.Error()), nil
		}
		if errors.Is(err, io.EOF) && c.used == 0 {
			switch {
			case c.noContent > 0:
				return nil, fmt.Errorf("%d GenAI spans, none with its prompt: %s", c.noContent, captureContent)
			case c.spans > 0:
				return nil, fmt.Errorf("%d spans and none of a model call (no gen_ai.* attributes): instrument the client with an OpenTelemetry GenAI instrumentation", c.spans)
			}
		}
		if err != nil {
			return nil, err
		}
		c.batches++
		if err := c.batch(v); err != nil {
			return skipLine(fmt.Sprintf("batch %d: %v", c.batches, err)), nil
		}
	}
}

type otlpBatch struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []otlpAttr `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Spans []otlpSpan `json:"spans"`
		} `json:"scopeSpans"`
		// The name before OTLP 1.0.
		InstrumentationLibrarySpans []struct {
			Spans []otlpSpan `json:"spans"`
		} `json:"instrumentationLibrarySpans"`
	} `json:"resourceSpans"`
}

type otlpSpan struct {
	TraceID    string          `json:"traceId"`
	SpanID     string          `json:"spanId"`
	Name       string          `json:"name"`
	Start      json.RawMessage `json:"startTimeUnixNano"`
	Attributes []otlpAttr      `json:"attributes"`
	Events     []struct {
		Name       string     `json:"name"`
		Attributes []otlpAttr `json:"attributes"`
	} `json:"events"`
}

type otlpAttr struct {
	Key   string    `json:"key"`
	Value otlpValue `json:"value"`
}

// otlpValue is an AnyValue of OTLP JSON.
type otlpValue struct {
	String *string                       `json:"stringValue"`
	Int    json.RawMessage               `json:"intValue"` // a string in OTLP JSON, a number from some writers
	Double *float64                      `json:"doubleValue"`
	Bool   *bool                         `json:"boolValue"`
	Array  *struct{ Values []otlpValue } `json:"arrayValue"`
	KV     *struct{ Values []otlpAttr }  `json:"kvlistValue"`
}

// text is the value as text: a string as it is, a number written out, anything else as JSON.
func (v otlpValue) text() string {
	switch {
	case v.String != nil:
		return *v.String
	case len(v.Int) > 0:
		return strings.Trim(string(v.Int), `"`)
	case v.Double != nil:
		return strconv.FormatFloat(*v.Double, 'g', -1, 64)
	case v.Bool != nil:
		return strconv.FormatBool(*v.Bool)
	case v.Array == nil && v.KV == nil:
		return "" // no value: an attribute the span does not have
	}
	b, _ := json.Marshal(v.plain())
	return string(b)
}

// plain is the value as plain JSON data.
func (v otlpValue) plain() any {
	switch {
	case v.String != nil:
		return *v.String
	case len(v.Int) > 0:
		n, _ := strconv.ParseInt(strings.Trim(string(v.Int), `"`), 10, 64)
		return n
	case v.Double != nil:
		return *v.Double
	case v.Bool != nil:
		return *v.Bool
	case v.Array != nil:
		out := make([]any, len(v.Array.Values))
		for i, e := range v.Array.Values {
			out[i] = e.plain()
		}
		return out
	case v.KV != nil:
		out := map[string]any{}
		for _, a := range v.KV.Values {
			out[a.Key] = a.Value.plain()
		}
		return out
	}
	return nil
}

// json is the value as JSON: a string holding JSON (the conventions' way) as that JSON.
func (v otlpValue) json() json.RawMessage {
	if v.String != nil {
		return json.RawMessage(*v.String)
	}
	b, _ := json.Marshal(v.plain())
	return b
}

func attrMap(as []otlpAttr) map[string]otlpValue {
	m := make(map[string]otlpValue, len(as))
	for _, a := range as {
		m[a.Key] = a.Value
	}
	return m
}

func (c *otlp) batch(v []byte) error {
	var b otlpBatch
	if err := json.Unmarshal(v, &b); err != nil {
		return fmt.Errorf("not an OTLP JSON batch: %v", err)
	}
	for _, rs := range b.ResourceSpans {
		res := attrMap(rs.Resource.Attributes)
		var spans []otlpSpan
		for _, ss := range rs.ScopeSpans {
			spans = append(spans, ss.Spans...)
		}
		for _, ss := range rs.InstrumentationLibrarySpans {
			spans = append(spans, ss.Spans...)
		}
		for _, sp := range spans {
			c.spans++
			if line, ok := c.span(sp, res); ok {
				c.queue = append(c.queue, line)
			}
		}
	}
	return nil
}

// span turns one span into a request line; ok is false for a span of no model call.
func (c *otlp) span(sp otlpSpan, res map[string]otlpValue) ([]byte, bool) {
	attrs := attrMap(sp.Attributes)
	genai := false
	for k := range attrs {
		if strings.HasPrefix(k, "gen_ai.") {
			genai = true
			break
		}
	}
	if !genai {
		return nil, false
	}
	switch attrs["gen_ai.operation.name"].text() {
	case "embeddings", "execute_tool", "create_agent", "invoke_agent", "invoke_workflow":
		// No prompt of their own reaches the engine (an agent's model calls are spans too).
		return nil, false
	}
	c.genai++
	where := "span " + sp.SpanID
	body, old := spanBody(sp, attrs)
	if body == nil {
		c.noContent++
		return skipLine(where + ": no prompt recorded: " + captureContent), true
	}
	if old {
		c.fromOld++
	}
	if m := attrs["gen_ai.request.model"].text(); m != "" {
		body["model"] = m
	}
	if v, ok := attrs["gen_ai.request.max_tokens"]; ok {
		if n, err := strconv.Atoi(v.text()); err == nil {
			body["max_tokens"] = n
		}
	}
	if v, ok := attrs["gen_ai.request.choice.count"]; ok {
		if n, err := strconv.Atoi(v.text()); err == nil {
			body["n"] = n
		}
	}
	if v, ok := attrs["gen_ai.tool.definitions"]; ok {
		body["tools"] = v.json()
	}
	rec := record{Body: body, Where: where}
	for _, k := range []string{"gen_ai.conversation.id", "session.id"} {
		if rec.SessionID == "" {
			rec.SessionID = attrs[k].text()
		}
		if rec.SessionID == "" {
			rec.SessionID = res[k].text()
		}
	}
	if rec.SessionID != "" {
		c.withSession++
	}
	if ns := strings.Trim(string(sp.Start), `"`); ns != "" && ns != "0" && ns != "null" {
		rec.Timestamp = json.Number(ns)
	}
	for _, k := range []string{"gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"} {
		if n, err := strconv.ParseInt(attrs[k].text(), 10, 64); err == nil && n > 0 {
			rec.CompletionTokens = &n
			c.withOutput++
			break
		}
	}
	c.used++
	return rec.line(), true
}

// spanBody finds a span's prompt (see the comment at the top); old says it came from a
// convention before gen_ai.input.messages.
func spanBody(sp otlpSpan, attrs map[string]otlpValue) (map[string]any, bool) {
	withSystem := func(msgs []any, system otlpValue, ok bool) []any {
		if !ok {
			return msgs
		}
		return append([]any{map[string]any{"role": "system", "content": partsContent(system.json())}}, msgs...)
	}
	if v, ok := attrs["gen_ai.input.messages"]; ok {
		if msgs := semconvMessages(v.json()); msgs != nil {
			sys, has := attrs["gen_ai.system_instructions"]
			return map[string]any{"messages": withSystem(msgs, sys, has)}, false
		}
	}
	for _, ev := range sp.Events {
		if ev.Name != "gen_ai.client.inference.operation.details" {
			continue
		}
		ea := attrMap(ev.Attributes)
		if v, ok := ea["gen_ai.input.messages"]; ok {
			if msgs := semconvMessages(v.json()); msgs != nil {
				sys, has := ea["gen_ai.system_instructions"]
				return map[string]any{"messages": withSystem(msgs, sys, has)}, false
			}
		}
	}
	var msgs []any
	for _, ev := range sp.Events {
		role, ok := strings.CutPrefix(ev.Name, "gen_ai.")
		role, ok2 := strings.CutSuffix(role, ".message")
		if !ok || !ok2 {
			continue
		}
		ea := attrMap(ev.Attributes)
		content := ea["content"]
		m := map[string]any{"role": role}
		if r := ea["role"].text(); r != "" {
			m["role"] = r
		}
		if content.String != nil {
			m["content"] = *content.String
		} else {
			m["content"] = content.text()
		}
		if tc, ok := ea["tool_calls"]; ok {
			m["tool_calls"] = tc.json()
		}
		msgs = append(msgs, m)
	}
	if len(msgs) > 0 {
		return map[string]any{"messages": msgs}, true
	}
	for _, ev := range sp.Events {
		if ev.Name != "gen_ai.content.prompt" {
			continue
		}
		p := attrMap(ev.Attributes)["gen_ai.prompt"]
		if p.String == nil {
			continue
		}
		raw := json.RawMessage(*p.String)
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
			return map[string]any{"messages": raw}, true
		}
		var one map[string]json.RawMessage
		if json.Unmarshal(raw, &one) == nil && len(one["role"]) > 0 {
			return map[string]any{"messages": []any{raw}}, true
		}
		return map[string]any{"prompt": *p.String}, true
	}
	for i := 0; ; i++ {
		pre := "gen_ai.prompt." + strconv.Itoa(i) + "."
		role, hasRole := attrs[pre+"role"]
		content, hasContent := attrs[pre+"content"]
		if !hasRole && !hasContent {
			break
		}
		m := map[string]any{"role": role.text(), "content": content.text()}
		if content.String == nil {
			m["content"] = ""
		}
		msgs = append(msgs, m)
	}
	if len(msgs) > 0 {
		return map[string]any{"messages": msgs}, true
	}
	return nil, false
}

// semconvMessages turns the conventions' messages ({role, parts: [...]}) into OpenAI-style
// messages; nil when raw is not a list of messages.
func semconvMessages(raw json.RawMessage) []any {
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil
	}
	out := make([]any, 0, len(list))
	for _, m := range list {
		msg := map[string]any{"role": stringOrNumber(m["role"])}
		switch {
		case len(m["parts"]) > 0:
			msg["content"] = partsContent(m["parts"])
		case len(m["content"]) > 0:
			msg["content"] = m["content"] // an OpenAI-style message, as some writers record
		default:
			msg["content"] = ""
		}
		out = append(out, msg)
	}
	return out
}

// partsContent writes the conventions' parts as OpenAI content parts: text as text, a tool
// call as its compact JSON (its bytes are in the prompt), a media part as a part the audit
// shows as a placeholder with its hash.
func partsContent(raw json.RawMessage) any {
	var parts []map[string]json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return string(raw)
	}
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		typ := stringOrNumber(p["type"])
		switch typ {
		case "text", "thinking", "reasoning":
			var text string
			if json.Unmarshal(p["content"], &text) != nil {
				_ = json.Unmarshal(p["text"], &text)
			}
			out = append(out, map[string]any{"type": "text", "text": text})
		case "tool_call", "tool_call_response", "server_tool_call", "server_tool_call_response":
			var buf bytes.Buffer
			b, _ := json.Marshal(p)
			_ = json.Compact(&buf, b)
			out = append(out, map[string]any{"type": "text", "text": buf.String()})
		default:
			b, _ := json.Marshal(p)
			h := fnv.New32a()
			h.Write(b)
			out = append(out, map[string]any{"type": typ, "file": fmt.Sprintf("%08x", h.Sum32())})
		}
	}
	return out
}

func (c *otlp) report() SourceReport {
	var rep SourceReport
	if c.noContent > 0 && c.used > 0 {
		rep.Lossy = append(rep.Lossy, fmt.Sprintf("%d GenAI spans hold no prompt (%s)", c.noContent, captureContent))
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("requests from %d GenAI spans of %d spans in %d batches; arrivals from startTimeUnixNano; sessions from gen_ai.conversation.id or session.id (%d of %d; the rest are grouped by conversation); output lengths from gen_ai.usage.output_tokens (%d)", c.used, c.spans, c.batches, c.withSession, c.used, c.withOutput))
	if c.fromOld > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d prompts from the conventions before gen_ai.input.messages (message events, gen_ai.prompt)", c.fromOld))
	}
	return rep
}

// bufioReader reads b.
func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
