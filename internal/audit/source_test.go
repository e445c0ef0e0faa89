package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sourceFigures are what a request log's format decides: which requests there are, and their
// sessions.
type sourceFigures struct {
	Format                                        LogFormat
	Requests, Chat, Completion, Skipped, Sessions int64
	Repeated, Inferred, FollowUps                 int64
}

func auditSource(t *testing.T, path string) (Summary, sourceFigures, error) {
	t.Helper()
	src, err := OpenSource(context.Background(), path, nil, SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = src.Close() }()
	s, err := AuditRequests(context.Background(), src, RequestOptions{})
	return s, sourceFigures{src.Format, s.Requests, s.Chat, s.Completion, s.Skipped, s.Sessions, s.RepeatedSessions, s.InferredSessions, s.FollowUps}, err
}

func TestSources(t *testing.T) {
	for _, tc := range []struct {
		file string
		want sourceFigures
		// lossy and note are parts of what the source report must say.
		lossy, note string
	}{
		{
			// The OpenTelemetry conventions' examples (see testdata/sources/SOURCE.md): four
			// model-call spans and an execute_tool span, which is left out. No span carries a
			// session: the second tool-call span repeats the first one's conversation (user,
			// then its tool call and the tool's answer), so the two are one inferred session;
			// the simple chat and the one with system instructions are sessions of one (the
			// latter opens with another system message). 3 sessions, 1 with two requests.
			file: "otlp_semconv_examples.jsonl",
			want: sourceFigures{Format: LogOTLP, Requests: 4, Chat: 4, Sessions: 3, Repeated: 1, Inferred: 3, FollowUps: 1},
			note: "requests from 4 GenAI spans of 5 spans",
		},
		{
			// vLLM's issue 16361: one request line among throughput lines.
			file: "vllm_issue_16361.log",
			want: sourceFigures{Format: LogVLLM, Requests: 1, Completion: 1, Sessions: 1},
			note: "prompts from the rendered prompt text",
		},
		{
			// Ours: the newer DEBUG+INFO pairs. 0003's prompt begins with 0001's whole prompt
			// (the next turn), 0005's token ids with 0004's: sessions {0001, 0003}, {0002},
			// {0004, 0005}; 2 follow-ups.
			file: "vllm_debug_multiturn.log",
			want: sourceFigures{Format: LogVLLM, Requests: 5, Completion: 5, Sessions: 3, Repeated: 2, FollowUps: 2},
			note: "2 requests begin with an earlier request's whole prompt",
		},
		{
			// Langfuse's own test trace of Google's ADK (SOURCE.md), as the UI downloads it:
			// {"trace", "observations"}. Two GENERATIONs in Gemini's contents format, the
			// trace's session demo-session; the CHAIN, AGENT and TOOL observations are no
			// model call. The 07:32:30.306 call sends [user "hi"], the 07:32:31.222 one
			// [user "hi", model's say_hello call, its response]: one session of two requests,
			// the second a follow-up of the first.
			file: "langfuse_trace_google_adk.json",
			want: sourceFigures{Format: LogLangfuse, Requests: 2, Chat: 2, Sessions: 1, Repeated: 1, FollowUps: 1},
			note: "3 spans and events that are no model call left out",
		},
		{
			// Langfuse's own test trace of AutoGen (SOURCE.md): one GENERATION whose input is
			// the prompt as one string ("system: ...\nuser: ..."), read as a completion, in
			// session session_abc; one SPAN left out.
			file: "langfuse_trace_autogen.json",
			want: sourceFigures{Format: LogLangfuse, Requests: 1, Completion: 1, Sessions: 1},
			note: "sessions from their trace's sessionId (1 of 1",
		},
		{
			// Ours, in Langfuse's field names: 3 generations with input (obs-2 and obs-3 in
			// session chat-42 through their traces, obs-5 LangChain-typed without a session),
			// one without input (skipped), a span left out. Sessions: chat-42 and obs-5's own.
			file:  "langfuse_export.jsonl",
			want:  sourceFigures{Format: LogLangfuse, Requests: 3, Chat: 3, Skipped: 1, Sessions: 2, Repeated: 1, Inferred: 1, FollowUps: 1},
			lossy: "1 generations hold no input",
			note:  "1 spans and events that are no model call left out",
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s, got, err := auditSource(t, filepath.Join("testdata/sources", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("figures (-want +got):\n%s", diff)
			}
			if s.Source == nil {
				t.Fatal("no source report")
			}
			all := strings.Join(s.Source.Notes, "\n")
			if !strings.Contains(all, tc.note) {
				t.Errorf("notes %q; want them to say %q", all, tc.note)
			}
			lossy := strings.Join(s.Source.Lossy, "\n")
			if tc.lossy == "" && lossy != "" || !strings.Contains(lossy, tc.lossy) {
				t.Errorf("lossy %q; want %q", lossy, tc.lossy)
			}
		})
	}
}

// liteLLMRows are spend-log rows as row_to_json writes them, one of each way a row holds its
// request (see source_litellm.go).
const liteLLMRows = `{"request_id":"r1","call_type":"acompletion","startTime":"2026-11-30T09:00:00","session_id":"s1","completion_tokens":12,"messages":{},"proxy_server_request":{"model":"qwen","messages":[{"role":"user","content":"one"}],"tools":[{"type":"function","function":{"name":"f"}}]}}
{"request_id":"r2","call_type":"acompletion","startTime":"2026-11-30T09:00:01","session_id":"s1","messages":{},"proxy_server_request":{},"metadata":{"proxy_server_request":"{\"model\": \"qwen\", \"messages\": [{\"role\": \"user\", \"content\": \"one\"}, {\"role\": \"assistant\", \"content\": \"1\"}, {\"role\": \"user\", \"content\": \"two\"}]}"}}
{"request_id":"r3","call_type":"completion","startTime":"2026-11-30T09:00:02","model":"qwen","messages":[{"role":"user","content":"old"}]}
{"request_id":"r4","call_type":"acompletion","startTime":"2026-11-30T09:00:03","messages":{},"proxy_server_request":{"messages":[{"role":"user","content":"aaaa... (litellm_truncated skipped 952 chars) ...zzzz"}]}}
{"request_id":"r5","call_type":"acompletion","startTime":"2026-11-30T09:00:04","messages":{},"proxy_server_request":{"messages":[{"role":"user","content":"redacted-by-litellm"}]}}
{"request_id":"r6","call_type":"aembedding","startTime":"2026-11-30T09:00:05","messages":{},"proxy_server_request":{"input":"x"}}
{"request_id":"r7","call_type":"acompletion","startTime":"2026-11-30T09:00:06","messages":{},"proxy_server_request":{}}
`

func TestLiteLLMRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spend.jsonl")
	if err := os.WriteFile(path, []byte(liteLLMRows), 0o600); err != nil {
		t.Fatal(err)
	}
	s, got, err := auditSource(t, path)
	if err != nil {
		t.Fatal(err)
	}
	// r1, r2 (session s1; r2 from metadata), r3 (the messages column), r4 (cut short): 4
	// requests; r5 (redacted) and r7 (nothing stored) skipped; r6, an embedding, left out.
	want := sourceFigures{Format: LogLiteLLM, Requests: 4, Chat: 4, Skipped: 2, Sessions: 3, Repeated: 1, Inferred: 2, FollowUps: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("figures (-want +got):\n%s", diff)
	}
	lossy := strings.Join(s.Source.Lossy, "\n")
	for _, w := range []string{"1 of 4 requests were stored cut short", "MAX_STRING_LENGTH_PROMPT_IN_DB", "1 rows hold no request", "1 rows hold redacted messages"} {
		if !strings.Contains(lossy, w) {
			t.Errorf("lossy %q; want it to say %q", lossy, w)
		}
	}
	notes := strings.Join(s.Source.Notes, "\n")
	for _, w := range []string{"2 from proxy_server_request", "1 from metadata.proxy_server_request", "1 from the messages column", "1 rows of other calls (such as aembedding) left out"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes %q; want them to say %q", notes, w)
		}
	}
	var codes []string
	for _, f := range s.Findings("spend.jsonl") {
		codes = append(codes, f.Code)
	}
	if !strings.Contains(strings.Join(codes, " "), "audit/source-lossy") {
		t.Errorf("findings %v; want audit/source-lossy", codes)
	}
}

func TestSourceErrors(t *testing.T) {
	for _, tc := range []struct {
		name, log string
		want      []string
	}{
		{"vLLM log without prompts", "", []string{"vLLM request log lines", "1 requests logged without their prompts", "VLLM_LOGGING_LEVEL=DEBUG"}},
		{"LiteLLM without stored requests", `{"request_id":"a","call_type":"acompletion","startTime":"2026-11-30T09:00:00","messages":{},"proxy_server_request":{}}` + "\n",
			[]string{"LiteLLM spend logs", "1 rows, none with the request stored", "store_prompts_in_spend_logs: true"}},
		{"OTLP without content", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":"a","startTimeUnixNano":"1","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}]}]}]}]}` + "\n",
			[]string{"OpenTelemetry spans", "1 GenAI spans, none with its prompt", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"}},
		{"Langfuse traces only", `[{"id":"t","timestamp":"2026-11-30T09:00:00Z","sessionId":"s","input":"hi","name":"x"}]`,
			[]string{"Langfuse export", "1 records and no generation", "GET /api/public/observations?type=GENERATION"}},
		{"Langfuse array cut short", `[{"id":"o","traceId":"t","type":"GENERATION","startTime":"2026-11-30T09:00:00Z","input":"hello"},{"id":"o2","traceId":"t"`,
			[]string{"Langfuse export", "cut short"}},
		{"text that is no vLLM log", "hello\nworld\n", []string{"2 lines and no request", "--enable-log-requests"}},
		{"Langfuse download without inputs", `{"trace": {"id": "t", "timestamp": "2026-11-30T09:00:00Z", "sessionId": "s", "name": "x"}, "observations": [{"id": "o", "traceId": "t", "type": "GENERATION", "startTime": "2026-11-30T09:00:00Z", "input": null}]}`,
			[]string{"Langfuse export", "1 generations, none with its input", "turn input capture on"}},
		{"Langfuse download cut short", "{\n  \"trace\": {\"id\": \"t\", \"timestamp\": \"2026-11-30T09:00:00Z\", \"sessionId\": \"s\", \"name\": \"x\"},\n  \"observations\": [{\"id\": \"o\", \"traceId\": \"t\", \"type\": \"GENER",
			[]string{"Langfuse export log: the file ends inside its first JSON document", "cut short; export it again"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := tc.log
			if log == "" {
				b, err := os.ReadFile("testdata/sources/vllm_issue_34503.log")
				if err != nil {
					t.Fatal(err)
				}
				log = string(b)
			}
			// The error comes from opening the log (an export cut inside its first
			// document) or from reading it.
			src, err := detect(strings.NewReader(log), "log", SourceOptions{})
			if err == nil {
				_, err = AuditRequests(context.Background(), src, RequestOptions{})
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v; want it to say %q", err, w)
				}
			}
		})
	}
}

func TestPyRepr(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		n        int
	}{
		{`'a\nb', rest`, "a\nb", 6},
		{`"it's", x`, "it's", 6},
		{`'\'q\' \\ \t\x07\u00e9\U0001f600'`, "'q' \\ \t\a\u00e9\U0001f600", 33},
		{`'é'`, "é", 4},
	} {
		got, n, ok := pyRepr(tc.in)
		if !ok || got != tc.want || n != tc.n {
			t.Errorf("pyRepr(%q) = %q, %d, %v; want %q, %d", tc.in, got, n, ok, tc.want, tc.n)
		}
	}
	for _, bad := range []string{`'open`, `x'`, `'\x4'`, `'\`} {
		if _, _, ok := pyRepr(bad); ok {
			t.Errorf("pyRepr(%q) ok; want refused", bad)
		}
	}
}

func TestVLLMLogCutByMaxLogLen(t *testing.T) {
	// --max-log-len 10: three different prompts cut to 10 characters, the longest in the log.
	var log strings.Builder
	for i, p := range []string{"0123456789", "abcdefghij", "ABCDEFGHIJ", "short"} {
		log.WriteString("INFO 01-02 03:04:0" + string(rune('0'+i)) + " [logger.py:39] Received request r" + string(rune('0'+i)) + ": prompt: '" + p + "', params: SamplingParams(n=1, max_tokens=8), prompt_token_ids: None, lora_request: None.\n")
	}
	src, err := detect(strings.NewReader(log.String()), "log", SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(src); err != nil {
		t.Fatal(err)
	}
	lossy := strings.Join(src.SourceReport().Lossy, "\n")
	if !strings.Contains(lossy, "3 different prompts are exactly 10 characters long") || !strings.Contains(lossy, "--max-log-len 10") {
		t.Errorf("lossy %q; want the cut at 10 characters named", lossy)
	}
}

func TestValueStreamBound(t *testing.T) {
	// A 100-byte element past a 40-byte bound is skipped, the next one read.
	in := `[{"a":"` + strings.Repeat("x", 100) + `"}, {"b":1}]`
	vs := newValueStream(bufio.NewReader(strings.NewReader(in)), 40)
	_, err := vs.next()
	var tl *tooLongError
	if !errors.As(err, &tl) {
		t.Fatalf("first element: %v; want too long", err)
	}
	v, err := vs.next()
	if err != nil || string(v) != `{"b":1}` {
		t.Fatalf("second element %q, %v", v, err)
	}
	if _, err := vs.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v; want EOF", err)
	}
}

// fuzzSource reads data through a converter to its end: no panic, and every line out is a
// JSON object the request reader takes or reports.
func fuzzSource(t *testing.T, conv converter) {
	src := &Source{Name: "fuzz", Format: LogJSONL, conv: conv}
	rr := NewRequestReader(src, 1<<20)
	for range 10000 {
		_, err := rr.Next()
		var le *LineError
		if err != nil && !errors.As(err, &le) {
			return
		}
	}
	_ = src.SourceReport()
}

func seedFile(f *testing.F, name string) {
	b, err := os.ReadFile(filepath.Join("testdata/sources", name))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

func FuzzOTLPSource(f *testing.F) {
	seedFile(f, "otlp_semconv_examples.jsonl")
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"events":[{"name":"gen_ai.user.message","attributes":[{"key":"content","value":{"stringValue":"hi"}}]}],"attributes":[{"key":"gen_ai.prompt.0.role","value":{"stringValue":"user"}}]}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzSource(t, newOTLP(newValueStream(bufio.NewReader(bytes.NewReader(data)), 1<<16)))
	})
}

func FuzzLangfuseSource(f *testing.F) {
	seedFile(f, "langfuse_export.jsonl")
	seedFile(f, "langfuse_trace_autogen.json")
	f.Add([]byte(`{"data":[{"id":"o","traceId":"t","type":"GENERATION","startTime":"x","input":{"messages":[]}}],"meta":{}}`))
	f.Add([]byte(`{"trace":{"id":"t","timestamp":"x","sessionId":"s","name":"n"},"observations":[{"id":"a","traceId":"t","type":"GENERATION","startTime":"x","input":{"contents":[{"role":"model","parts":[{"text":"hi"}]}]}},{"id":"b","parentObservationId":"a","traceId":"t","type":"GENERATION","startTime":"x","input":[{"role":"user","parts":[{"type":"text","content":"q"}]},{"type":"function_call","name":"f"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzSource(t, newLangfuse(newValueStream(bufio.NewReader(bytes.NewReader(data)), 1<<16)))
	})
}

func FuzzLiteLLMSource(f *testing.F) {
	f.Add([]byte(liteLLMRows))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzSource(t, newLiteLLM(newValueStream(bufio.NewReader(bytes.NewReader(data)), 1<<16)))
	})
}

func FuzzVLLMLogSource(f *testing.F) {
	seedFile(f, "vllm_debug_multiturn.log")
	seedFile(f, "vllm_issue_16361.log")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzSource(t, newVLLMLog(bufio.NewReader(bytes.NewReader(data)), 1<<16))
	})
}

func FuzzDetect(f *testing.F) {
	seedFile(f, "langfuse_export.jsonl")
	f.Add([]byte("[1, 2"))
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		src, err := detect(bytes.NewReader(data), "fuzz", SourceOptions{MaxLine: 1 << 16})
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, src)
	})
}

// TestLangfuseShapes: the inputs Langfuse's integrations record, each turned into the request
// the engine saw. The cases are the shapes of Langfuse's own test traces (SOURCE.md), cut to
// one message each.
func TestLangfuseShapes(t *testing.T) {
	download := func(obs string) string {
		return `{"trace": {"id": "t1", "timestamp": "2026-11-30T09:00:00Z", "name": "x", "sessionId": "s1", "userId": null,
			"observations": [{"id": "g9", "traceId": "t1", "type": "GENERATION", "startTime": "2026-11-30T09:00:00Z", "input": null}]},
			"observations": [` + obs + `]}`
	}
	for _, tc := range []struct {
		name, log string
		want      []string // the request lines, as the reader reads them
		note      string
	}{
		{
			// agno: the framework's OpenAIChat.invoke generation around the OpenAI
			// instrumentation's: the inner one is the call as sent, the wrapper is left out.
			// The trace's own copy of the observations (g9, no input) is not read.
			name: "wrapper",
			log: download(`{"id": "g1", "traceId": "t1", "type": "GENERATION", "startTime": "2026-11-30T09:00:01Z", "input": {"messages": ["role='user' content='hi'"]}},
				{"id": "g2", "traceId": "t1", "parentObservationId": "g1", "type": "GENERATION", "startTime": "2026-11-30T09:00:01Z", "input": "user: hi"}`),
			want: []string{`{"body":{"prompt":"user: hi"},"session_id":"s1","timestamp":"2026-11-30T09:00:01Z","source_record":"observation g2"}`},
			note: "1 generations that wrap another generation left out",
		},
		{
			// pydantic-ai, Microsoft's agent framework: the OpenTelemetry conventions' parts.
			name: "parts",
			log:  download(`{"id": "g1", "traceId": "t1", "type": "GENERATION", "startTime": "2026-11-30T09:00:01Z", "input": [{"role": "user", "parts": [{"type": "text", "content": "hello"}, {"type": "tool_call", "id": "c1", "name": "f", "arguments": {"a": 1}}]}]}`),
			want: []string{`{"body":{"messages":[{"content":[{"text":"hello","type":"text"},{"text":"{\"arguments\":{\"a\":1},\"id\":\"c1\",\"name\":\"f\",\"type\":\"tool_call\"}","type":"text"}],"parts":[{"type":"text","content":"hello"},{"type":"tool_call","id":"c1","name":"f","arguments":{"a":1}}],"role":"user"}]},"session_id":"s1","timestamp":"2026-11-30T09:00:01Z","source_record":"observation g1"}`},
		},
		{
			// OpenAI Agents (the Responses API): a tool call and its output are items of their
			// own, without a role; LangGraph: a content that is one object.
			name: "responses items",
			log:  download(`{"id": "g1", "traceId": "t1", "type": "GENERATION", "startTime": "2026-11-30T09:00:01Z", "input": "[{\"content\": \"weather?\", \"role\": \"user\"}, {\"arguments\": \"{\\\"city\\\":\\\"Tokyo\\\"}\", \"name\": \"get_weather\", \"type\": \"function_call\"}, {\"output\": \"sunny\", \"type\": \"function_call_output\"}, {\"role\": \"tool\", \"content\": {\"type\": \"function\"}}]"}`),
			want: []string{`{"body":{"messages":[{"content":"weather?","role":"user"},{"arguments":"{\"city\":\"Tokyo\"}","content":"get_weather({\"city\":\"Tokyo\"})","name":"get_weather","role":"assistant","type":"function_call"},{"content":"sunny","output":"sunny","role":"tool","type":"function_call_output"},{"content":"{\"type\": \"function\"}","role":"tool"}]},"session_id":"s1","timestamp":"2026-11-30T09:00:01Z","source_record":"observation g1"}`},
		},
		{
			// Google's ADK and GenerateContent: contents and the system instruction.
			name: "gemini",
			log:  download(`{"id": "g1", "traceId": "t1", "type": "GENERATION", "startTime": "2026-11-30T09:00:01Z", "model": "gemini", "input": {"config": {"system_instruction": {"parts": [{"text": "Be brief."}]}}, "contents": [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"function_call": {"name": "f"}}]}]}}`),
			want: []string{`{"body":{"messages":[{"content":"Be brief.","role":"system"},{"content":"hi","role":"user"},{"content":"{\"function_call\":{\"name\":\"f\"}}","role":"assistant"}],"model":"gemini"},"session_id":"s1","timestamp":"2026-11-30T09:00:01Z","source_record":"observation g1"}`},
		},
		{
			// LlamaIndex: the Python call's arguments, complete("...").
			name: "args",
			log:  download(`{"id": "g1", "traceId": "t1", "type": "GENERATION", "startTime": "2026-11-30T09:00:01Z", "input": {"args": ["What is Langfuse?"]}}`),
			want: []string{`{"body":{"prompt":"What is Langfuse?"},"session_id":"s1","timestamp":"2026-11-30T09:00:01Z","source_record":"observation g1"}`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := detect(strings.NewReader(tc.log), "log", SourceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if src.Format != LogLangfuse {
				t.Fatalf("format %s, want langfuse", src.Format)
			}
			b, err := io.ReadAll(src)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, strings.Split(strings.TrimSpace(string(b)), "\n")); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			notes := strings.Join(src.SourceReport().Notes, "\n")
			if !strings.Contains(notes, tc.note) {
				t.Errorf("notes %q; want %q", notes, tc.note)
			}
		})
	}
}

// TestPeekHoldsFirstRecordOnce: telling a log's format keeps what it read of the first record
// once (the record is a part of the bytes kept for the replay, not a second and third copy)
// and at most the limit of it, however long the record: a first line of 64 MiB that never
// ends was kept whole in the replay before, and a 60 MB one three times.
func TestPeekHoldsFirstRecordOnce(t *testing.T) {
	const limit = 1 << 20
	endless := io.MultiReader(strings.NewReader(`{"messages": "`), io.LimitReader(repeatByte('x'), 64<<20))
	vs := newValueStream(bufio.NewReader(endless), limit)
	if _, err := vs.peek(); err == nil {
		t.Fatal("peek of a record past the limit that never ends: no error")
	}
	if len(vs.read) > limit+1 {
		t.Errorf("kept %d bytes of a record past the limit of %d", len(vs.read), limit)
	}

	rec := `{"model": "m", "prompt": "` + strings.Repeat("y", 4096) + `"}`
	vs = newValueStream(bufio.NewReader(strings.NewReader("  "+rec+"\n{}\n")), limit)
	v, err := vs.peek()
	if err != nil || string(v) != rec {
		t.Fatalf("peek = %.40q, %v; want the first record", v, err)
	}
	if &v[0] != &vs.read[2] {
		t.Error("the peeked record is a copy of the bytes kept for the replay, not a part of them")
	}
	all, err := io.ReadAll(vs.rest())
	if err != nil || string(all) != "  "+rec+"\n{}\n" {
		t.Errorf("rest replays %.60q (%v), want the whole log", all, err)
	}
}

// repeatByte is an endless reader of one byte.
type repeatByte byte

func (r repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}
