#!/usr/bin/python3
"""A vLLM-format KV-event publisher on pyzmq (libzmq), for kvcheck's interop tests.

It binds a PUB socket, prints "READY <port>", and sends probe batches every 10 ms until a line
"GO" arrives on stdin. It then sends --count batches as fast as it can through a PUB socket
with send high-water mark --hwm, sends one final batch, and prints one JSON line:
{"first_seq": <first batch after GO>, "last_seq": <final batch>, "sent": <batches handed to
zmq after GO>}, then keeps sending tail batches every 10 ms. libzmq drops silently at the
high-water mark, so only the tap's sequence accounting can tell how many arrived. It exits when
stdin has another line or closes.

Batches follow SPEC 1.3-1.5: frames [topic, seq as 8 bytes big-endian, msgpack payload], the
payload [ts, events, dp_rank], events positional arrays (--era array, vLLM 0.22-0.23) or maps
(--era map, vLLM 0.24+).
"""
import argparse
import json
import select
import struct
import sys
import time

import msgpack
import zmq


def stored(era, i, block_size):
    tokens = [(i * 7 + k) % 50000 for k in range(block_size * 4)]
    hashes = [(i << 8) + b for b in range(4)]
    if era == "map":
        return {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": None,
                "token_ids": tokens, "block_size": block_size, "lora_id": None,
                "medium": "GPU", "lora_name": None, "extra_keys": None, "group_idx": 0,
                "kv_cache_spec_kind": "full_attention"}
    return ["BlockStored", hashes, None, tokens, block_size, None, "GPU", None, None, 0,
            "full_attention", None]


def batch(era, i, n_events, block_size):
    evs = [stored(era, i * n_events + j, block_size) for j in range(n_events)]
    return msgpack.packb([time.time(), evs, 0], use_bin_type=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--hwm", type=int, default=100000)
    ap.add_argument("--era", choices=["map", "array"], default="map")
    ap.add_argument("--topic", default="")
    ap.add_argument("--events", type=int, default=2)
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--corpus-event", metavar="JSON",
                    help="send this captured BlockStored (llm-d's kv_event_base.json shape) as the probe")
    ap.add_argument("--seconds", type=float, default=0,
                    help="after GO, send at full speed for this long instead of --count batches")
    a = ap.parse_args()

    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUB)
    sock.setsockopt(zmq.SNDHWM, a.hwm)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    print("READY %d" % port, flush=True)
    topic = a.topic.encode()
    seq = 0

    def send(payload):
        nonlocal seq
        sock.send_multipart([topic, struct.pack(">Q", seq), payload], copy=False)
        seq += 1

    probe = None
    if a.corpus_event:
        ev = json.load(open(a.corpus_event))
        probe = msgpack.packb([time.time(), [{
            "type": "BlockStored", "block_hashes": ev["block_hashes"],
            "parent_block_hash": ev["parent_block_hash"], "token_ids": ev["token_ids"],
            "block_size": ev["block_size"], "lora_id": None, "medium": ev.get("medium"),
            "lora_name": ev.get("lora_name"), "extra_keys": None, "group_idx": 0,
            "kv_cache_spec_kind": "full_attention"}], 0], use_bin_type=True)
    while True:
        send(probe if probe is not None else batch(a.era, seq, 1, a.block_size))
        r, _, _ = select.select([sys.stdin], [], [], 0.01)
        if r and sys.stdin.readline().strip() == "GO":
            break
    payloads = [batch(a.era, i, a.events, a.block_size) for i in range(min(a.count, 256))]
    first = seq
    if a.seconds > 0:
        end = time.perf_counter() + a.seconds
        i = 0
        while time.perf_counter() < end:
            for _ in range(256):
                send(payloads[i % len(payloads)])
                i += 1
    else:
        for i in range(a.count):
            send(payloads[i % len(payloads)])
    # A final batch can itself be dropped at a small high-water mark while the burst drains,
    # so keep sending tail batches every 10 ms until stdin has a line or closes: the receiver
    # waits for any sequence number at or past last_seq instead of for one batch that may be lost.
    last = seq
    send(batch(a.era, seq, 1, a.block_size))
    print(json.dumps({"first_seq": first, "last_seq": last, "sent": last - first + 1}), flush=True)
    while True:
        r, _, _ = select.select([sys.stdin], [], [], 0.01)
        if r:
            break
        send(batch(a.era, seq, 1, a.block_size))
    sock.close()
    ctx.term()


if __name__ == "__main__":
    main()
