#!/usr/bin/python3
"""The reference receiver for kvcheck's end-to-end measurement: a pyzmq (libzmq) SUB that
connects to ENDPOINT, receives [topic, seq, payload] messages without decoding them, prints
"READY" once the first message arrived, and stops when LAST_SEQ (read from stdin) has arrived
or after --idle seconds without messages. It prints one JSON line: messages, payload bytes,
seconds between the first and the last message, batches lost by sequence, and the CPU seconds
the process used (user + system), for a rate per CPU second that machine load does not skew."""
import argparse
import json
import resource
import select
import struct
import sys
import time

import zmq

ap = argparse.ArgumentParser()
ap.add_argument("endpoint")
ap.add_argument("--idle", type=float, default=3.0)
a = ap.parse_args()
ctx = zmq.Context()
s = ctx.socket(zmq.SUB)
s.setsockopt(zmq.RCVHWM, 0)
s.connect(a.endpoint)
s.setsockopt(zmq.SUBSCRIBE, b"")
msgs = nbytes = lost = 0
expected = None
first = last = None
last_seq = None
ready = False
poller = zmq.Poller()
poller.register(s, zmq.POLLIN)
while True:
    if last_seq is None and msgs % 1024 == 0 and select.select([sys.stdin], [], [], 0)[0]:
        line = sys.stdin.readline().strip()
        if line:
            last_seq = int(line)
    if not poller.poll(int(a.idle * 1000)):
        break
    topic, seqb, payload = s.recv_multipart(copy=True)
    now = time.perf_counter()
    (seq,) = struct.unpack(">Q", seqb)
    if first is None:
        first = now
    last = now
    if expected is not None and seq > expected:
        lost += seq - expected
    expected = seq + 1
    msgs += 1
    nbytes += len(payload)
    if not ready:
        print("READY", flush=True)
        ready = True
    if last_seq is not None and seq >= last_seq:
        break
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"messages": msgs, "payload_bytes": nbytes, "seconds": (last or 0) - (first or 0), "lost": lost,
                  "cpu_seconds": ru.ru_utime + ru.ru_stime}), flush=True)
