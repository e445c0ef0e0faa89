#!/usr/bin/python3
"""Many vLLM-format KV-event publishers in one process, at a steady rate, for kvcheck's load test.

It binds --publishers PUB sockets (each its own endpoint, as many vLLM replicas would), prints
"READY <port> <port> ...", and waits for a line "GO" on stdin. It then sends, on every socket,
batches of --events BlockStored events paced to --rate bytes a second each, for --seconds,
and prints one JSON line: {"sent": [batches sent per socket], "bytes": [payload bytes per
socket], "seconds": <elapsed>}. The send high-water mark is large (--hwm), so a slow receiver
shows as the receiver's own drops, not as loss at the publisher. It exits when stdin closes.
"""
import argparse
import json
import struct
import sys
import time

import msgpack
import zmq


def batch(i, n_events, block_size):
    evs = []
    for j in range(n_events):
        k = i * n_events + j
        tokens = [(k * 7 + t) % 50000 for t in range(block_size * 4)]
        evs.append({"type": "BlockStored", "block_hashes": [(k << 8) + b for b in range(4)],
                    "parent_block_hash": None, "token_ids": tokens, "block_size": block_size,
                    "lora_id": None, "medium": "GPU", "lora_name": None, "extra_keys": None,
                    "group_idx": 0, "kv_cache_spec_kind": "full_attention"})
    return msgpack.packb([time.time(), evs, 0], use_bin_type=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--publishers", type=int, default=64)
    ap.add_argument("--rate", type=float, default=1e6, help="payload bytes a second per publisher")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--events", type=int, default=8)
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--hwm", type=int, default=1000000)
    a = ap.parse_args()

    ctx = zmq.Context()
    socks, ports = [], []
    for _ in range(a.publishers):
        s = ctx.socket(zmq.PUB)
        s.setsockopt(zmq.SNDHWM, a.hwm)
        s.setsockopt(zmq.LINGER, 0)
        ports.append(s.bind_to_random_port("tcp://127.0.0.1"))
        socks.append(s)
    print("READY " + " ".join(map(str, ports)), flush=True)
    # Distinct content per publisher and batch would cost the sender more than the sending:
    # 256 payloads are built once and sent in turn, as pub.py does.
    payloads = [batch(i, a.events, a.block_size) for i in range(256)]
    size = sum(len(p) for p in payloads) / len(payloads)
    seqs = [0] * a.publishers
    sent_bytes = [0] * a.publishers
    if sys.stdin.readline().strip() != "GO":
        return
    start = time.perf_counter()
    tick = 0.01
    per_tick = a.rate * tick / size  # batches per publisher per tick, fractional
    owed = 0.0
    n = 0
    while True:
        now = time.perf_counter()
        if now - start >= a.seconds:
            break
        # Catch up to where the schedule says we should be, then sleep to the next tick.
        due = int((now - start) / tick + 1) * per_tick
        k = int(due - owed)
        owed += k
        for _ in range(k):
            p = payloads[n % len(payloads)]
            n += 1
            for i, s in enumerate(socks):
                s.send_multipart([b"", struct.pack(">Q", seqs[i]), p], copy=False)
                seqs[i] += 1
                sent_bytes[i] += len(p)
        time.sleep(max(0.0, start + (int((now - start) / tick) + 1) * tick - time.perf_counter()))
    print(json.dumps({"sent": seqs, "bytes": sent_bytes, "seconds": time.perf_counter() - start}), flush=True)
    sys.stdin.readline()
    for s in socks:
        s.close()
    ctx.term()


if __name__ == "__main__":
    main()
