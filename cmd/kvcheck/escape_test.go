package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/kvcheck/kvcheck/internal/events"
)

// hostile is what an input can carry into a name or a value: a newline and a GitHub Actions
// workflow command after it, a carriage return (which the runner also reads as a line's end),
// an escape sequence, the runner's legacy "##[" command form, and a right-to-left override.
const hostile = "x\n::error file=x::forged\r\x1b[31m##[warning]legacy\u202e"

// leading is a name that is a workflow command by itself, with no control character: harmful
// where a line starts with it, as a file's heading in lint's text does.
const leading = "::error file=y::forged-lead"

// TestHostileNamesNotForged feeds names and values carrying newlines, carriage returns, escape
// sequences and workflow commands through every command's text output (the default, also in
// a GitHub Actions step, whose runner reads "::command" at a line's start and "##[command]"
// anywhere in every line of standard output and error): file names, Grafana titles and refIds,
// LiteLLM model_names and YAML keys, label values of a /metrics dump, request logs' models
// and sessions, a recording's endpoints and topics, flag values, errors quoting a path, and
// notes. No line kvcheck writes may start a workflow command, hold "##[", a carriage return,
// an escape character or a bidi override, and the hostile text must reach the output (escaped),
// or the case would test nothing. Before, lint and hitrate printed them raw.
func TestHostileNamesNotForged(t *testing.T) {
	dir := t.TempDir()
	esc := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dash := fmt.Sprintf(`{"title": %s, "panels": [{"title": %s, "targets": [{"expr": "avg(vllm:gpu_cache_usage_perc)", "refId": %s}]}]}`,
		esc(hostile), esc(hostile), esc(hostile))
	write("lint/"+leading+".json", dash)
	write("lint/n\n::error file=z::forged-name\x1b]0;title\x07.json", dash)
	write("lint/litellm.yaml", fmt.Sprintf("model_list:\n  - model_name: %s\n    litellm_params:\n      model: hosted_vllm/Qwen/Qwen3-32B\n      api_base: http://gw:80/v1\nrouter_settings:\n  routing_strategy: simple-shuffle\n  %s: 1\n", esc(hostile), esc(hostile)))
	rules := "groups:\n- name: kv\n  rules:\n  - alert: KVFull\n    expr: vllm:gpu_cache_usage_perc > 0.9\n    annotations:\n      description: |\n        ::error file=x::forged-context\n"
	fixme := write("fix/"+leading+".yaml", rules)
	write("diff/"+leading+".yaml", rules)

	var reqs strings.Builder
	for i := range 20 {
		b, _ := json.Marshal(map[string]any{"model": hostile, "messages": []map[string]string{
			{"role": "system", "content": strings.Repeat("You are helpful. ", 40)}, {"role": "user", "content": fmt.Sprint("hi ", i)}},
			"metadata": map[string]string{"session_id": hostile}})
		reqs.Write(append(b, '\n'))
	}
	requests := write("requests "+leading+"\x1b[2J.jsonl", reqs.String())

	// Exposition label values escape only \, " and newline; the rest is raw.
	label := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(hostile)
	dump := write("dump "+leading+".prom", fmt.Sprintf("# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{model_name=\"%s\",pod=\"%s\"} 1000\n# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{model_name=\"%s\",pod=\"%s\"} 500\n", label, label, label, label))

	recording := write(leading+"\x1b[2J.kvtap", string(hostileRecording(t)))

	tests := []struct {
		name    string
		args    []string
		environ []string
	}{
		{"lint", []string{"lint", filepath.Join(dir, "lint")}, nil},
		{"lint config", []string{"lint", filepath.Join(dir, "lint/litellm.yaml")}, nil},
		{"lint missing file", []string{"lint", filepath.Join(dir, hostile)}, nil},
		{"lint fix notes", []string{"lint", "--fix", fixme}, nil},
		{"lint diff in actions", []string{"lint", "--diff", filepath.Join(dir, "diff")}, []string{"GITHUB_ACTIONS=true"}},
		{"hitrate", []string{"hitrate", "--file", dump}, nil},
		{"audit", []string{"audit", "--requests", requests}, nil},
		{"assess", []string{"assess", "--requests", requests, "--config", filepath.Join(dir, "lint/litellm.yaml")}, nil},
		{"simulate", []string{"simulate", "--requests", requests, "--replicas", "2"}, nil},
		{"tap", []string{"tap", "--from", recording}, nil},
		{"metrics", []string{"metrics", "--target", "vllm=" + hostile}, nil},
		{"metrics version", []string{"metrics", "--target-version", hostile}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tt.args, streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, tt.environ)
			all := out.String() + errOut.String()
			if !strings.Contains(all, "forged") {
				t.Fatalf("exit %d: the hostile input reached no output, so this case tests nothing:\n%s", code, all)
			}
			for _, bad := range []string{"\r", "\x1b", "\u202e", "\x07"} {
				if strings.Contains(all, bad) {
					t.Errorf("exit %d: output holds %q raw:\n%q", code, bad, all)
				}
			}
			stopped := "" // the token of a ::stop-commands:: kvcheck wrote
			for _, stream := range []string{out.String(), errOut.String()} {
				for _, line := range strings.Split(stream, "\n") {
					trimmed := strings.TrimLeftFunc(line, unicode.IsSpace)
					switch {
					case stopped != "" && trimmed == "::"+stopped+"::":
						stopped = ""
					case stopped != "":
						// Between ::stop-commands:: and its token the runner reads no command.
					case strings.HasPrefix(trimmed, "::stop-commands::") && tt.environ != nil:
						stopped = strings.TrimPrefix(trimmed, "::stop-commands::")
					case strings.HasPrefix(trimmed, "::") || strings.Contains(line, "##["):
						t.Errorf("exit %d: a line reads as a workflow command: %q", code, line)
					}
				}
				if stopped != "" {
					t.Errorf("commands stopped with %s and never resumed", stopped)
				}
			}
		})
	}
}

// hostileRecording is a kvcheck tap recording of one batch from a publisher whose endpoint
// and topic carry hostile text.
func hostileRecording(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	rec, err := events.NewRecorder(&buf)
	if err != nil {
		t.Fatal(err)
	}
	b := events.Batch{TS: 1, Events: []events.Event{{Type: events.TypeBlockStored, BlockSize: 4,
		BlockHashes: []events.Hash{{Form: events.HashInt, Value: 7}}, TokenIDs: []int64{1, 2, 3, 4}}}}
	frames := [][]byte{[]byte("kv@" + hostile), binary.BigEndian.AppendUint64(nil, 0), events.AppendBatch(nil, &b, events.Wire{Era: events.EraMap})}
	m := events.FromFrames("tcp://"+hostile, frames, 1e9)
	rec.Message(&m, frames)
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
