package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readBothWays reads every line of data with the reader's fast path on or off: each request, or
// its error's text.
func readBothWays(data []byte, keepRaw, slow bool) []string {
	slowJSON = slow
	defer func() { slowJSON = false }()
	rr := NewRequestReader(bytes.NewReader(data), 1<<16)
	rr.KeepRaw = keepRaw
	var out []string
	for range 10000 {
		req, err := rr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			out = append(out, "error: "+err.Error())
			continue
		}
		out = append(out, fmt.Sprintf("%#v body key %q", *req, rr.BodyKey()))
	}
	return out
}

// exportSeeds are export records and bodies that take each way through the reader: bodies at
// the top, under one and two keys, held in strings; names in other cases, with escapes and
// non-ASCII letters (encoding/json folds ſ to s); repeated names; sessions and headers in the
// record; invalid JSON; a line whose messages do not decode.
var exportSeeds = []string{
	`{"start_time": 1, "metadata": {"session_id": "s1"}, "request": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}}`,
	`{"request": {"messages": [{"role": "user", "content": "a"}]}}` + "\n" + `{"request": {"prompt": "b"}, "headers": {"X-Session-Id": "h1", "Other": ["v", "w"]}}`,
	`{"body": "{\"prompt\":\"p\"}", "session_id": 7}`,
	`{"a": {"b": {"messages": [{"role": "u", "content": [{"type": "text", "text": "x"}]}]}}, "proxy_server_request": {"headers": {"x-acme-session-id": "z"}}}`,
	`{"Messages": [{"role": "user", "content": "upper"}]}`,
	`{"PROMPT": "upper"}`,
	`{"meſſages": [{"role": "user", "content": "long s"}]}`,
	`{"m\u0065ssages": [{"role": "user", "content": "escaped"}]}`,
	`{"req": {"m\u0065ssages": [{"role": "user", "content": "escaped inside"}]}}`,
	`{"req": {"messages": 1}}`,
	`{"req": {"messages": [{"role": "user", "content": "first"}]}, "req": {"prompt": "second"}}`,
	`{"metadata": {"session_id": "a"}, "metadata": {"session_id": "b"}, "request": {"prompt": "p"}}`,
	`{"request": {"prompt": "p", "metadata": {"session_id": "inner"}}, "metadata": {"session_id": "outer"}}`,
	`{"request": {"prompt": "p"}} trailing`,
	`{"request": {"prompt": "p"`,
	`{"x": 1}`,
	`{"request": "not json"}`,
	`{"request": "{\"messages\": [{\"role\": \"user\", \"content\": \"in a string\"}]}", "headers": "{\"x-session-id\": \"str\"}"}`,
	`{"data": {"payload": {"prompt": [1, 2, 3]}}, "meta\u0064ata": {"session_id": "esc"}}`,
	`{"request": {"messages": [{"role": "user", "content": "a", "cache_control": {"type": "ephemeral"}}], "chat_template_kwargs": {"k": 1}}}`,
	`{ "request" : { "prompt" : "spaced" } , "x" : [ 1 , { "y" : "}" } ] }`,
	`{"request": {"prompt": "\"quoted\" \\ back"}, "k\"ey": 1}`,
	`{"résumé": {"prompt": "non-ascii key"}}`,
	// Bodies at the top, decoded without encoding/json where it is sure to agree.
	`{"model": "m", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": null, "tool_calls": [{"id": 1}]}], "tools": [ {"a": 1} ], "session_id": 5, "headers": {"x-session-id": "h"}, "metadata": {"session_id": "m"}}`,
	`{"Model": "m", "messages": [{"role": "user", "content": "a"}]}`,
	`{"model": "m", "model": "n", "messages": [{"role": "user", "content": "a"}]}`,
	`{"messages": [{"role": "user", "content": "a"}], "messages": [{"role": "system"}]}`,
	`{"messages": [{"Role": "user", "content": "a"}]}`,
	`{"messages": [{"role": "user", "role": "system", "content": "a"}]}`,
	`{"messages": [null, {"role": "user", "content": "a"}]}`,
	`{"messages": [{"role": 5, "content": "a"}]}`,
	`{"messages": [{"role": null, "content": "a"}]}`,
	`{"messages": [{"role": "us\u0065r", "content": "esc\n"}]}`,
	"{\"messages\": [{\"role\": \"\xff\xfeuser\", \"content\": \"bad utf-8 \xff\"}]}",
	`{"messages": [{"role": "user", "content": "é ü 中"}]}`,
	`{"messages": [{"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}, {"type": "image_url", "image_url": {"url": "x"}}]}]}`,
	`{"messages": [{"role": "user", "content": {"a": 1}}]}`,
	`{"messages": [{"role": "user", "content": 5}]}`,
	`{"messages": {"role": "user"}}`,
	`{"messages": null, "prompt": "p"}`,
	`{"messages": [], "prompt": null}`,
	`{"prompt": [1, 2, 3], "model": null}`,
	`{"messages": [[1]]}`,
	`{"messages": [ { "role" : "user" , "content" : "spaced" } , { "role" : "assistant" } ] }`,
}

// TestFastPathAgrees reads every seed, and the request-log fixtures, with the fast path and
// with the old way (encoding/json only), with and without KeepRaw: the requests, errors and
// body keys must be the same.
func TestFastPathAgrees(t *testing.T) {
	inputs := exportSeeds
	paths, _ := filepath.Glob("../../testdata/audit/requests/*.jsonl")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		for _, keep := range []bool{false, true} {
			fast, slow := readBothWays([]byte(in), keep, false), readBothWays([]byte(in), keep, true)
			if !reflect.DeepEqual(fast, slow) {
				t.Errorf("input %.200q keepRaw %v:\nfast %q\nslow %q", in, keep, fast, slow)
			}
		}
	}
}

// FuzzFastPathAgrees: whatever the input, the fast path gives what encoding/json alone gives.
func FuzzFastPathAgrees(f *testing.F) {
	for _, s := range exportSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		keep := len(data)%2 == 0
		fast, slow := readBothWays(data, keep, false), readBothWays(data, keep, true)
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %q\nslow %q", fast, slow)
		}
	})
}

// exportLog writes a gateway export of about size bytes, the shape simulate's request-log
// benchmark reads: sessions of 1 to 4 turns behind a shared 2 KB system prompt, each turn
// repeating the conversation so far, with a start_time, a session id in the record's metadata
// and the body (with max_tokens) under "request".
func exportLog(tb testing.TB, size int) []byte {
	tb.Helper()
	system := strings.Repeat("You are the ACME operations agent. Follow the runbook, cite tickets by id, never guess. ", 24)[:2048]
	var buf bytes.Buffer
	t := 1764496800.0
	for s := 0; buf.Len() < size; s++ {
		msgs := []map[string]string{{"role": "system", "content": system}}
		for turn := range 1 + s%4 {
			msgs = append(msgs, map[string]string{"role": "user", "content": fmt.Sprintf("session %d turn %d: %s", s, turn, strings.Repeat("status of ticket INC-4411 and its dependencies? ", 4))})
			body, err := json.Marshal(map[string]any{"model": "m", "messages": msgs, "max_tokens": 200})
			if err != nil {
				tb.Fatal(err)
			}
			line, err := json.Marshal(map[string]any{"start_time": t, "metadata": map[string]string{"session_id": fmt.Sprint("s", s)}, "request": json.RawMessage(body)})
			if err != nil {
				tb.Fatal(err)
			}
			buf.Write(line)
			buf.WriteByte('\n')
			t += 0.05
			msgs = append(msgs, map[string]string{"role": "assistant", "content": strings.Repeat("Checked. ", 12)})
		}
	}
	return buf.Bytes()
}

// BenchmarkRequestReader reads a 16 MB gateway export with the reader as it is and with
// encoding/json alone (the reader before the fast path: slowJSON), alternately in one loop,
// and compares their CPU time (x-cpu: encoding/json-only time over the reader's).
func BenchmarkRequestReader(b *testing.B) {
	data := exportLog(b, 16<<20)
	read := func(slow bool) time.Duration {
		slowJSON = slow
		defer func() { slowJSON = false }()
		t0 := cpuNow()
		rr := NewRequestReader(bytes.NewReader(data), 0)
		for {
			_, err := rr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		return cpuNow() - t0
	}
	var fast, slow time.Duration
	for b.Loop() {
		fast += read(false)
		slow += read(true)
	}
	mb := float64(len(data)) * float64(b.N) / 1e6
	b.ReportMetric(mb/fast.Seconds(), "reader-MB/cpu-s")
	b.ReportMetric(mb/slow.Seconds(), "json-only-MB/cpu-s")
	b.ReportMetric(slow.Seconds()/fast.Seconds(), "x-cpu")
}

// cpuNow is the CPU time this process has used, user and system.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// FuzzValidJSON: validJSON answers as json.Valid does.
func FuzzValidJSON(f *testing.F) {
	for _, s := range exportSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{"", " ", "0", "-0", "01", "-", "1.", "1.5e", "1e+5", "1E-05", "-12.5e3", "tru", "true ", " null", "nul", "falsey",
		`"\u12"`, `"\u12g4"`, `"\uABCD"`, `"\x"`, "\"\t\"", `"\/"`, `[1,]`, `[,1]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `{"a":1}{}`, `[[[]]]`, `{"a":[{"b":{}}]}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001), "\"\xff\xfe\"", "[1 2]", "[\"a\"\n,\r\"b\"\t]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", data, got, want)
		}
	})
}
