"""Packs a two-rank trace set (workload.json, workload.0.et, workload.1.et)
into one input of the trace-set fuzz target (FuzzTraceSet.cpp):
   u32 n | workload.json | u32 m | rank 0 | rank 1

   pack_trace_set.py TRACE_DIR OUT_FILE
"""
import struct
import sys

d, out = sys.argv[1], sys.argv[2]
parts = [open(f"{d}/{name}", "rb").read()
         for name in ("workload.json", "workload.0.et", "workload.1.et")]
with open(out, "wb") as f:
    f.write(struct.pack("<I", len(parts[0])) + parts[0])
    f.write(struct.pack("<I", len(parts[1])) + parts[1])
    f.write(parts[2])
