#!/bin/sh
# measure-limits.sh: the peak memory of kvcheck at the bounds README's limits table states.
#
# Usage: scripts/measure-limits.sh [KVCHECK] [CASE...]
#   KVCHECK defaults to bin/kvcheck (make build). CASE names one of the cases below; none runs
#   them all. Inputs are generated into $TMPDIR/kvcheck-limits (about 1.5 GB; removed at the end).
#
# For each case it prints the command, its exit code, the first line of its standard error and
# its peak resident set size (/usr/bin/time's %M). The peak heap of the same bounds is measured by
# Go tests (TestLongRequestLineMemory, TestTraceLimitMemory in cmd/kvcheck with KVCHECK_LIMITS=1;
# the others named in README).
set -eu

KVCHECK=${1:-bin/kvcheck}
[ $# -gt 0 ] && shift
case $KVCHECK in /*) ;; *) KVCHECK=$PWD/$KVCHECK ;; esac
[ -x "$KVCHECK" ] || { echo "measure-limits: $KVCHECK is not an executable kvcheck (run make build)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "measure-limits: /usr/bin/time is needed (Debian: apt-get install time)" >&2; exit 2; }
PY=${PYTHON:-python3}
DIR=${TMPDIR:-/tmp}/kvcheck-limits
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT INT TERM
cd "$DIR"

# run NAME ARGS...: run kvcheck and print its peak resident size.
run() {
	name=$1
	shift
	set +e
	/usr/bin/time -f '%M' -o time.out "$KVCHECK" "$@" >out.txt 2>err.txt
	code=$?
	set -e
	printf '%s\tkvcheck %s\texit %s\tpeak RSS %s MB\t%s\n' "$name" "$*" "$code" "$(($(tail -n 1 time.out) / 1024))" "$(head -c 300 err.txt | head -n 1)"
}

want() {
	[ $# -eq 0 ] && return 0
	for c in "$@"; do [ "$c" = "$CASE" ] && return 0; done
	return 1
}

line60() { # one request line of 60 MB: one content string
	$PY -c '
import json
print(json.dumps({"model": "m", "messages": [{"role": "user", "content": "word " * 12_000_000}]}))' >line60.jsonl
	run line60-audit audit --requests line60.jsonl
	run line60-assess assess --requests line60.jsonl
	run line60-simulate simulate --requests line60.jsonl --replicas 2 --policies round-robin
}

trace_requests() { # 4 Mi + 1 requests: a request log of one word each, and Mooncake rows of one block
	$PY -c '
n = (1 << 22) + 1
open("tiny.jsonl", "w").write("{\"prompt\": \"hi\"}\n" * n)
with open("rows.jsonl", "w") as f:
    for i in range(n):
        f.write("{\"timestamp\": %d, \"input_length\": 16, \"output_length\": 1, \"hash_ids\": [%d]}\n" % (i, i))'
	run requests-log simulate --requests tiny.jsonl --replicas 2 --policies round-robin
	run requests-log-assess assess --requests tiny.jsonl
	run requests-mooncake simulate --trace rows.jsonl --replicas 2 --policies round-robin
	rm -f tiny.jsonl rows.jsonl
}

block_refs() { # 64 Mi + 64 block references: 1 Mi + 1 Mooncake rows of 64 blocks
	$PY -c '
ids = ",".join(str(i) for i in range(64))
open("refs.jsonl", "w").write(("{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [%s]}\n" % ids) * ((1 << 20) + 1))'
	run block-refs simulate --trace refs.jsonl --replicas 2 --policies round-robin
	rm -f refs.jsonl
}

dump64() { # a /metrics dump just under 64 MiB of series hitrate reads, one replica each
	$PY -c '
import sys
limit = 64 << 20
with open("dump.prom", "w") as f:
    n, i = 0, 0
    names = ["vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:num_requests_running", "vllm:kv_cache_usage_perc"]
    while True:
        line = "%s{model_name=\"m\",instance=\"10.0.%d.%d:8000\",pod=\"vllm-%d\"} %d\n" % (names[i % 4], i // 4 // 250, i // 4 % 250, i // 4, i)
        if n + len(line) > limit - 64:
            break
        f.write(line)
        n += len(line)
        i += 1
print(i, "series", file=sys.stderr)'
	run hitrate-dump64 hitrate --file dump.prom
	rm -f dump.prom
}

lint16() { # a Grafana dashboard just under 16 MiB: panels of PromQL targets
	$PY -c '
import json
panels, size = [], 0
i = 0
while size < (16 << 20) - 4096:
    p = {"id": i, "type": "timeseries", "title": "panel %d" % i, "datasource": {"type": "prometheus", "uid": "prom"},
         "targets": [{"refId": "A", "expr": "sum by (model_name) (rate(vllm:prefix_cache_hits_total{job=\"j%d\"}[5m])) / sum by (model_name) (rate(vllm:prefix_cache_queries_total{job=\"j%d\"}[5m]))" % (i, i)}]}
    size += len(json.dumps(p)) + 2
    panels.append(p)
    i += 1
json.dump({"title": "big", "uid": "big", "schemaVersion": 39, "panels": panels[:-1]}, open("big.json", "w"))'
	run lint-16mib lint big.json
	rm -f big.json
}

yaml10k() { # a YAML stream of 10,000 documents, and of 10,001
	$PY -c '
doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  a: \"1\"\n"
open("stream.yaml", "w").write("---\n".join(doc % i for i in range(10000)))
open("stream10001.yaml", "w").write("---\n".join(doc % i for i in range(10001)))'
	run yaml-10000 lint stream.yaml
	run yaml-10001 lint stream10001.yaml
	rm -f stream.yaml stream10001.yaml
}

template16() { # a chat template just under 16 MiB
	$PY -c '
body = "{% for m in messages %}{{ m.content }}{% endfor %}"
open("big.jinja", "w").write("You are a helpful assistant. " * ((16 << 20) // 29 - 8) + body)'
	run template-16mib audit big.jinja
	rm -f big.jinja
}

sessions4m() { # 4 Mi + 1 requests, each its own session: audit's session count at --max-blocks
	$PY -c '
with open("sessions.jsonl", "w") as f:
    for i in range((1 << 22) + 1):
        f.write("{\"user\": \"u%d\", \"session_id\": \"s%d\", \"prompt\": \"hello\"}\n" % (i, i))'
	run sessions-4mi audit --requests sessions.jsonl
	rm -f sessions.jsonl
}

for CASE in line60 trace_requests block_refs dump64 lint16 yaml10k template16 sessions4m; do
	if want "$@"; then
		$CASE
	fi
done
