#!/usr/bin/python3
"""Decode the msgpack payloads in a file (each prefixed by a 4-byte big-endian length) with
python3-msgpack (C extension) for SECONDS of CPU time, and print one JSON line with MB and events per CPU second.
kvcheck's decode benchmark runs it on the same bytes in the same run to quote a ratio."""
import json
import struct
import sys
import time

import msgpack

path, seconds = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
data = open(path, "rb").read()
payloads, off = [], 0
while off < len(data):
    (n,) = struct.unpack(">I", data[off:off + 4])
    payloads.append(data[off + 4:off + 4 + n])
    off += 4 + n
assert msgpack.Unpacker.__module__ == "msgpack._cmsgpack", "python3-msgpack without its C extension"
nbytes = nevents = 0
# CPU time, not wall time: on a shared machine the wall clock also counts other processes.
start = time.process_time()
while time.process_time() - start < seconds:
    for p in payloads:
        b = msgpack.unpackb(p)
        nbytes += len(p)
        nevents += len(b[1])
elapsed = time.process_time() - start
print(json.dumps({"mb_per_sec": nbytes / elapsed / 1e6, "events_per_sec": nevents / elapsed}))
