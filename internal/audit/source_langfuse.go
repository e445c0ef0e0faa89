package audit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Langfuse exports: traces and observations as the public API returns them (GET
// /api/public/observations, /api/public/traces, a page {"data": [...], "meta": {...}}) and as
// the UI's and blob storage's exports write them (JSON arrays or JSONL, camelCase or
// snake_case names). A model call is an observation of type GENERATION: its input is what the
// SDK captured of the request (OpenAI-style messages, or a prompt string), its startTime the
// arrival; its session is its trace's sessionId, from the observation itself or from its trace
// earlier in the file. A trace's own input is the application's, not the model's, so traces
// give sessions only.

// langfuseDownload reports whether a document is a trace as the Langfuse UI downloads it (and
// as Langfuse's own tests keep them, worker/src/__tests__/chatml/framework-traces in
// langfuse/langfuse): {"trace": {...}, "observations": [...]}, the trace's own list of
// observations without their inputs and the document's with them.
func langfuseDownload(keys map[string]json.RawMessage) bool {
	if _, ok := keys["observations"]; !ok {
		return false
	}
	trace, ok := asObject(keys["trace"])
	return ok && langfuseRecord(trace)
}

// langfuseRecord reports whether a record's names are a Langfuse trace or observation.
func langfuseRecord(keys map[string]json.RawMessage) bool {
	has := func(names ...string) bool {
		for _, n := range names {
			if _, ok := keys[n]; ok {
				return true
			}
		}
		return false
	}
	observation := has("traceId", "trace_id") && has("input", "type") && has("startTime", "start_time")
	trace := has("id") && has("timestamp") && has("sessionId", "session_id", "userId", "user_id") && has("input", "observations", "name")
	return observation || trace
}

// maxTraceSessions bounds the traces remembered for their session (about 100 bytes each).
const maxTraceSessions = 1 << 20

type langfuse struct {
	vs       *valueStream
	sessions map[string]string // trace id -> session id
	queue    [][]byte          // requests of a trace with its observations inside
	page     *valueStream      // the records of a {"data": [...]} page

	// wrappers are the generations of the current page or document that hold another
	// generation: a framework's wrapper around the model call the inner one records.
	wrappers map[string]bool

	records, generations, used, noInput, otherObs, traces int64
	withSession, withOutput, tooLong, wrapped             int64
	sessionsFull                                          bool
}

func newLangfuse(vs *valueStream) *langfuse {
	return &langfuse{vs: vs, sessions: map[string]string{}}
}

func (c *langfuse) next() ([]byte, error) {
	for {
		if len(c.queue) > 0 {
			line := c.queue[0]
			c.queue = c.queue[1:]
			return line, nil
		}
		v, err := c.value()
		var tl *tooLongError
		if errors.As(err, &tl) {
			c.tooLong++
			return skipLine(tl.Error()), nil
		}
		if errors.Is(err, io.EOF) && c.used == 0 {
			switch {
			case c.noInput > 0:
				return nil, fmt.Errorf("%d generations, none with its input: the Langfuse SDK captured no input (masking, or input capture turned off in the integration); turn input capture on and export again", c.noInput)
			case c.generations == 0 && c.records > 0:
				return nil, fmt.Errorf("%d records and no generation (an observation of type GENERATION): export the observations (the Observations table's export, or GET /api/public/observations?type=GENERATION); a trace's input is the application's, not the model's", c.records)
			}
		}
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil {
			return skipLine(fmt.Sprintf("record %d: invalid JSON: %v", c.records+1, err)), nil
		}
		if data, ok := m["data"]; ok && !langfuseRecord(m) {
			// A page of the API: its records, one by one.
			if err := c.openPage(data); err != nil {
				return nil, err
			}
			continue
		}
		if langfuseDownload(m) {
			// A downloaded trace: its session from the trace, its requests from the
			// document's observations (the trace's copies have no input).
			trace, _ := asObject(m["trace"])
			delete(trace, "observations")
			c.records++
			c.record(trace)
			if err := c.openPage(m["observations"]); err != nil {
				return nil, err
			}
			continue
		}
		c.records++
		if line, ok := c.record(m); ok {
			return line, nil
		}
	}
}

// value is the next record: of the current page, else of the file.
func (c *langfuse) value() ([]byte, error) {
	if c.page != nil {
		v, err := c.page.next()
		if !errors.Is(err, io.EOF) {
			return v, err
		}
		c.page, c.wrappers = nil, nil
	}
	return c.vs.next()
}

func (c *langfuse) openPage(data json.RawMessage) error {
	if c.page != nil {
		return errors.New("a page inside a page")
	}
	vs := newValueStream(bufioReader(data), c.vs.limit)
	vs.keep = false
	c.page = vs
	c.wrappers = wrapperGenerations(data)
	return nil
}

// wrapperGenerations returns the ids of the generations of a list of observations that are
// the parent of another generation. Some integrations record one model call twice, the
// framework's call (agno's OpenAIChat.invoke, with the messages as the framework's objects)
// around the client library's (the OpenAI instrumentation's chat span, with the messages as
// sent): the inner one is the request the engine saw, so the wrapper is left out.
func wrapperGenerations(list json.RawMessage) map[string]bool {
	var obs []struct {
		ID, Type, ParentObservationID string
		ParentSnake                   string `json:"parent_observation_id"`
	}
	if json.Unmarshal(list, &obs) != nil {
		return nil
	}
	typ := map[string]string{}
	for _, o := range obs {
		typ[o.ID] = strings.ToUpper(o.Type)
	}
	var out map[string]bool
	for _, o := range obs {
		parent := cmp.Or(o.ParentObservationID, o.ParentSnake)
		if strings.ToUpper(o.Type) == "GENERATION" && parent != "" && typ[parent] == "GENERATION" {
			if out == nil {
				out = map[string]bool{}
			}
			out[parent] = true
		}
	}
	return out
}

// record turns one trace or observation into request lines; ok is false when it gives none.
func (c *langfuse) record(m map[string]json.RawMessage) ([]byte, bool) {
	str := func(names ...string) string {
		for _, n := range names {
			if s := stringOrNumber(m[n]); s != "" {
				return s
			}
		}
		return ""
	}
	if _, obs := m["traceId"]; !obs {
		if _, obs = m["trace_id"]; !obs {
			// A trace: its session, for its observations; observations inside it are read.
			c.traces++
			id, sess := str("id"), str("sessionId", "session_id")
			if id != "" && sess != "" {
				if len(c.sessions) < maxTraceSessions {
					c.sessions[id] = sess
				} else {
					c.sessionsFull = true
				}
			}
			var inner []map[string]json.RawMessage
			if json.Unmarshal(m["observations"], &inner) == nil {
				for _, o := range inner {
					if _, ok := o["traceId"]; !ok {
						o["traceId"], _ = json.Marshal(id)
					}
					if line, ok := c.observation(o, func(names ...string) string {
						for _, n := range names {
							if s := stringOrNumber(o[n]); s != "" {
								return s
							}
						}
						return ""
					}); ok {
						c.queue = append(c.queue, line)
					}
				}
			}
			return nil, false
		}
	}
	return c.observation(m, str)
}

func (c *langfuse) observation(m map[string]json.RawMessage, str func(...string) string) ([]byte, bool) {
	typ := strings.ToUpper(str("type"))
	if typ != "GENERATION" && !(typ == "" && len(m["model"]) > 0) {
		c.otherObs++
		return nil, false
	}
	if c.wrappers[str("id")] {
		c.wrapped++
		return nil, false
	}
	c.generations++
	where := "observation " + str("id")
	body, err := langfuseBody(m["input"])
	if err != nil {
		c.noInput++
		return skipLine(where + ": " + err.Error()), true
	}
	if model := str("model"); model != "" {
		body["model"] = model
	}
	if params, ok := asObject(firstOf(m, "modelParameters", "model_parameters")); ok {
		for _, k := range []string{"max_tokens", "max_completion_tokens", "n"} {
			if v, ok := params[k]; ok {
				body[k] = v
			}
		}
	}
	rec := record{Body: body, Where: where}
	rec.SessionID = str("sessionId", "session_id")
	if rec.SessionID == "" {
		rec.SessionID = c.sessions[str("traceId", "trace_id")]
	}
	if rec.SessionID != "" {
		c.withSession++
	}
	if t := firstOf(m, "startTime", "start_time"); len(t) > 0 && string(t) != "null" {
		rec.Timestamp = t
	}
	if n, ok := usageOutput(m); ok {
		rec.CompletionTokens = &n
		c.withOutput++
	}
	c.used++
	return rec.line(), true
}

func firstOf(m map[string]json.RawMessage, names ...string) json.RawMessage {
	for _, n := range names {
		if v, ok := m[n]; ok && len(v) > 0 && string(v) != "null" {
			return v
		}
	}
	return nil
}

// usageOutput reads the completion's length from an observation's usage.
func usageOutput(m map[string]json.RawMessage) (int64, bool) {
	for _, k := range []string{"usageDetails", "usage_details", "usage"} {
		u, ok := asObject(m[k])
		if !ok {
			continue
		}
		for _, f := range []string{"output", "completionTokens", "completion_tokens", "output_tokens"} {
			var n int64
			if json.Unmarshal(u[f], &n) == nil && n > 0 {
				return n, true
			}
		}
	}
	return 0, false
}

// langfuseBody makes a request body of a generation's input: messages (a list, or an object
// with messages, as some integrations log the call's arguments), or a prompt string. A string
// that holds JSON (the blob export keeps input as text) is read as that JSON.
func langfuseBody(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("no input: the Langfuse SDK captured none (masking, or input capture off)")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t := strings.TrimSpace(s)
		if t == "" {
			return nil, errors.New("an empty input")
		}
		if (t[0] == '[' || t[0] == '{') && json.Valid([]byte(t)) {
			raw = json.RawMessage(t)
		} else {
			return map[string]any{"prompt": s}, nil
		}
	}
	if m, ok := asObject(raw); ok {
		if msgs, ok := m["messages"]; ok {
			body := map[string]any{"messages": chatMessages(msgs)}
			if tools, ok := m["tools"]; ok {
				body["tools"] = tools
			}
			return body, nil
		}
		if p, ok := m["prompt"]; ok {
			return map[string]any{"prompt": p}, nil
		}
		if contents, ok := m["contents"]; ok {
			// Google's GenerateContent request (google-genai, Vertex, the ADK).
			if msgs, ok := geminiMessages(contents, m["config"]); ok {
				return map[string]any{"messages": msgs}, nil
			}
		}
		if args, ok := m["args"]; ok {
			// A Python call's arguments as an integration captured them: complete("...")
			// or chat([messages]).
			var list []json.RawMessage
			if json.Unmarshal(args, &list) == nil && len(list) > 0 {
				var prompt string
				if json.Unmarshal(list[0], &prompt) == nil && prompt != "" {
					return map[string]any{"prompt": prompt}, nil
				}
				var msgs []map[string]json.RawMessage
				if json.Unmarshal(list[0], &msgs) == nil && len(msgs) > 0 {
					return map[string]any{"messages": chatMessages(list[0])}, nil
				}
			}
		}
		return nil, errors.New("input is an object without messages, contents or a prompt: not a model call's request")
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil, errors.New("input is neither messages nor text")
	}
	return map[string]any{"messages": chatMessages(raw)}, nil
}

// chatMessages returns a list of messages with OpenAI's roles: LangChain's messages name theirs
// by type (human, ai, system, tool), and OpenAI's Responses API lists a tool call and its output
// as items of their own (function_call, function_call_output), which become an assistant and a
// tool message holding them as written.
func chatMessages(raw json.RawMessage) any {
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return raw
	}
	roles := map[string]string{"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "chat": "user"}
	for _, m := range list {
		if _, ok := m["content"]; !ok && len(m["parts"]) > 0 {
			// The OpenTelemetry GenAI conventions' messages, as OTel-based SDKs record them.
			m["content"], _ = json.Marshal(partsContent(m["parts"]))
		} else if c := bytes.TrimSpace(m["content"]); len(c) > 0 && c[0] == '{' {
			// A content that is one object (a tool's definition, as LangGraph records
			// it): its JSON is what the prompt holds.
			m["content"], _ = json.Marshal(string(c))
		}
		if _, ok := m["role"]; ok {
			continue
		}
		typ := stringOrNumber(m["type"])
		if r, ok := roles[typ]; ok {
			m["role"], _ = json.Marshal(r)
			continue
		}
		switch typ {
		case "function_call":
			m["role"], _ = json.Marshal("assistant")
			m["content"], _ = json.Marshal(stringOrNumber(m["name"]) + "(" + stringOrNumber(m["arguments"]) + ")")
		case "function_call_output":
			m["role"], _ = json.Marshal("tool")
			m["content"], _ = json.Marshal(stringOrNumber(m["output"]))
		}
	}
	return list
}

// geminiMessages turns Google's GenerateContent contents ({role: user|model, parts: [{text} |
// {function_call} | {function_response}]}) and the config's system instruction into messages
// with OpenAI's roles; a part that is not text is kept as its JSON, so two requests that
// differ in it differ in their prompt too.
func geminiMessages(contents, config json.RawMessage) ([]map[string]string, bool) {
	var list []struct {
		Role  string            `json:"role"`
		Parts []json.RawMessage `json:"parts"`
	}
	if json.Unmarshal(contents, &list) != nil || len(list) == 0 {
		return nil, false
	}
	text := func(parts []json.RawMessage) string {
		var b strings.Builder
		for _, p := range parts {
			var t struct {
				Text *string `json:"text"`
			}
			if json.Unmarshal(p, &t) == nil && t.Text != nil {
				b.WriteString(*t.Text)
				continue
			}
			var buf bytes.Buffer
			if json.Compact(&buf, p) == nil {
				b.Write(buf.Bytes())
			}
		}
		return b.String()
	}
	var out []map[string]string
	if cfg, ok := asObject(config); ok {
		si := firstOf(cfg, "system_instruction", "systemInstruction")
		var s string
		var c struct {
			Parts []json.RawMessage `json:"parts"`
		}
		switch {
		case json.Unmarshal(si, &s) == nil && s != "":
			out = append(out, map[string]string{"role": "system", "content": s})
		case json.Unmarshal(si, &c) == nil && len(c.Parts) > 0:
			out = append(out, map[string]string{"role": "system", "content": text(c.Parts)})
		}
	}
	for _, c := range list {
		role := "user"
		switch c.Role {
		case "model":
			role = "assistant"
		case "function", "tool":
			role = "tool"
		}
		out = append(out, map[string]string{"role": role, "content": text(c.Parts)})
	}
	return out, true
}

func (c *langfuse) report() SourceReport {
	var rep SourceReport
	if c.noInput > 0 && c.used > 0 {
		rep.Lossy = append(rep.Lossy, fmt.Sprintf("%d generations hold no input (masking, or input capture off)", c.noInput))
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("requests from the %d generations; arrivals from their startTime; sessions from their trace's sessionId (%d of %d; the rest are grouped by conversation); output lengths from their usage (%d)", c.generations, c.withSession, c.used, c.withOutput))
	if c.otherObs > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d spans and events that are no model call left out", c.otherObs))
	}
	if c.wrapped > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d generations that wrap another generation left out: the inner one is the same model call as the engine saw it", c.wrapped))
	}
	if c.sessionsFull {
		rep.Notes = append(rep.Notes, fmt.Sprintf("more than %d traces: the sessions of later ones were not remembered", maxTraceSessions))
	}
	return rep
}
