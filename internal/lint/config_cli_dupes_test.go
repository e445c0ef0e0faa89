package lint

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// routerDeployment is a Deployment of replicas pods whose container starts production-stack's
// router with command and args as given (YAML flow lists or block text).
func routerDeployment(replicas int, command, args string) string {
	return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: router\nspec:\n  replicas: %d\n  template:\n    spec:\n      containers:\n      - name: router\n        image: lmcache/lmstack-router:latest\n        command: %s\n        args: %s\n",
		replicas, command, args)
}

// TestDuplicateFlags: a flag given twice on one command line was read as the last value (what
// argparse does) without a word. Each case is worked from argparse: a store action keeps the
// last; --enable-prefix-caching and --no-enable-prefix-caching are one BooleanOptionalAction
// option, so the later wins; vLLM reads --block_size as --block-size and -tp as
// --tensor-parallel-size; --middleware appends, so repeating it is no finding; a key written twice
// in --kv-events-config's JSON is kept last by Python's json and vLLM's pydantic reader.
// Positions worked by hand: the second --routing-logic is line 18 of the Deployment; in
// {"enable_kv_cache_events":true,"publisher":"zmq","topic":... the first "topic" opens at
// character 50 (1 + 24 + 1 + 4 + 1 + 11 + 1 + 5 + 1 + 1) and the second at 91.
func TestDuplicateFlags(t *testing.T) {
	type want struct {
		code string
		line int
		msg  string
	}
	router := routerDeployment(1, `["vllm_router"]`, "\n        - --routing-logic\n        - session\n        - --session-key\n        - x-user-id\n        - --routing-logic\n        - roundrobin\n")
	engine := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vllm\nspec:\n  template:\n    spec:\n      containers:\n      - name: vllm\n        image: vllm/vllm-openai:v0.26.0\n        command: [\"vllm\", \"serve\", \"Qwen/Qwen3-8B\"]\n        args:\n        - --enable-prefix-caching\n        - --block-size=16\n        - --no-enable-prefix-caching\n        - --block_size\n        - \"64\"\n        - -tp\n        - \"2\"\n        - --tensor-parallel-size=4\n        - --middleware\n        - a.b\n        - --middleware\n        - c.d\n"
	kv := "#!/bin/sh\nvllm serve m --kv-events-config '{\"enable_kv_cache_events\":true,\"publisher\":\"zmq\",\"topic\":\"kv@a\",\"endpoint\":\"tcp://*:5557\",\"topic\":\"kv@b\"}'\n"
	nested := "#!/bin/sh\nvllm serve m --kv-transfer-config '{\"kv_connector\":\"x\",\"kv_connector_extra_config\":{\"a\":1,\"b\":[{\"c\":1,\"c\":2}],\"a\":3}}'\n"
	// A flag in each branch of an if is given once when the chart renders.
	branches := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  template:\n    spec:\n      containers:\n      - name: vllm\n        image: vllm/vllm-openai:v0.26.0\n        command: [\"vllm\", \"serve\", \"m\"]\n        args:\n        {{- if .Values.long }}\n        - --max-model-len=32768\n        {{- else }}\n        - --max-model-len=8192\n        {{- end }}\n"
	branchDup := strings.Replace(branches, "        - --max-model-len=8192\n", "        - --max-model-len=8192\n        - --max-model-len=16384\n", 1)
	tests := []struct {
		name, file, src string
		want            []want
	}{
		{"vllm_router --routing-logic twice", "router.yaml", router, []want{{"cli/duplicate-flag", lineOf(t, router, "- --routing-logic\n        - roundrobin"),
			`--routing-logic is given twice on one vllm_router command line (at 14:11 and 18:11, line:column): its argparse keeps the last, --routing-logic "roundrobin" (18:11), silently, and kvcheck reads that one`}}},
		{"vLLM switch pair, underscore, short name", "vllm.yaml", engine, []want{
			{"cli/duplicate-flag", 15, `--enable-prefix-caching, --no-enable-prefix-caching sets one option, --enable-prefix-caching, twice on one vLLM command line (at 13:11 and 15:11, line:column): its argparse keeps the last, --no-enable-prefix-caching (15:11)`},
			{"cli/duplicate-flag", 16, `--block-size "16", --block_size "64" sets one option, --block-size, twice on one vLLM command line (at 14:11 and 16:11, line:column): its argparse keeps the last, --block_size "64" (16:11)`},
			{"cli/duplicate-flag", 20, `-tp "2", --tensor-parallel-size "4" sets one option, --tensor-parallel-size, twice`}}},
		{"--kv-events-config topic twice", "serve.sh", kv, []want{{"json/duplicate-key", 2,
			`--kv-events-config: key "topic" is written twice in one JSON object (at characters 50 and 91 of the value): vLLM's JSON reader keeps the last (character 91), silently, and kvcheck reads that one`}}},
		{"nested JSON", "serve.sh", nested, []want{
			{"json/duplicate-key", 2, `key "kv_connector_extra_config.b[].c" is written twice`},
			{"json/duplicate-key", 2, `key "kv_connector_extra_config.a" is written twice`}}},
		{"negative: Helm template branches", "vllm.yaml", branches, nil},
		{"Helm template, twice in one branch", "vllm.yaml", branchDup, []want{{"cli/duplicate-flag", lineOf(t, branchDup, "- --max-model-len=16384"), "--max-model-len is given twice"}}},
		{"negative: once each, --middleware twice", "vllm.yaml", strings.Replace(strings.Replace(strings.Replace(engine, "        - --no-enable-prefix-caching\n", "", 1), "        - --block_size\n        - \"64\"\n", "", 1), "        - --tensor-parallel-size=4\n", "", 1), nil},
		{"negative: vllm_router once each", "router.yaml", routerDeployment(1, `["vllm_router"]`, `["--routing-logic", "session", "--session-key", "x"]`), nil},
		{"negative: JSON keys once", "serve.sh", "vllm serve m --kv-events-config '{\"enable_kv_cache_events\":true,\"topic\":\"kv@\"}'\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLinter(t, "").File(tt.file, []byte(tt.src))
			var got []Finding
			for _, f := range r.Findings {
				if f.Code == "cli/duplicate-flag" || f.Code == "json/duplicate-key" {
					got = append(got, f)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("duplicate findings %v, want %d (all: %v)", got, len(tt.want), r.Findings)
			}
			for i, w := range tt.want {
				f := got[i]
				if f.Code != w.code || f.File != tt.file || f.Line != w.line || f.Severity != finding.Warning || !strings.Contains(f.Message, w.msg) {
					t.Errorf("finding %d: %s %s:%d (%v) %q; want %s at %s:%d, a warning containing %q", i, f.Code, f.File, f.Line, f.Severity, f.Message, w.code, tt.file, w.line, w.msg)
				}
			}
		})
	}
}
