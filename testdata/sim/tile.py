#!/usr/bin/env python3
"""Tile a Mooncake JSONL trace end to end with fresh block ids, as BenchmarkScale does in Go.

usage: tile.py TRACE.jsonl COPIES OUT.jsonl [REQUESTS]

Copy k starts 1 s after copy k-1's last request and adds k * (largest hash id + 1) to every hash
id, so the copies share no block. REQUESTS, when given, keeps only the first REQUESTS lines.
"""
import json
import sys


def main():
    src, copies, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    limit = int(sys.argv[4]) if len(sys.argv) > 4 else None
    rows = [json.loads(line) for line in open(src) if line.strip()]
    top = max(h for r in rows for h in r["hash_ids"]) + 1
    span = max(r["timestamp"] for r in rows) + 1000  # milliseconds
    n = 0
    with open(out, "w") as f:
        for k in range(copies):
            for r in rows:
                if limit is not None and n == limit:
                    return
                c = dict(r)
                c["timestamp"] = r["timestamp"] + k * span
                c["hash_ids"] = [h + k * top for h in r["hash_ids"]]
                for key in ("session_id", "chat_id"):
                    if key in r and k > 0:
                        c[key] = f"{r[key]}/{k}"
                f.write(json.dumps(c) + "\n")
                n += 1


if __name__ == "__main__":
    main()
