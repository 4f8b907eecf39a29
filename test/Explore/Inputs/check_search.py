"""Checks stage-explore's JSON output against what the request asked for.

  check_search.py JSON GPUS CAPACITY_BYTES TOP

Independently of the tool: every plan's degrees multiply to the GPUs, every
peak fits the capacity, the array is sorted by iteration time (best
first), plans are distinct, MFU and tokens/s per GPU follow from the
iteration, and there are at most TOP of them.
"""
import json
import re
import sys

plans = json.load(open(sys.argv[1]))
gpus, capacity, top = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
assert isinstance(plans, list) and plans, "expected a non-empty JSON array"
assert len(plans) <= top, f"{len(plans)} plans, more than --top={top}"
seen = set()
for p in plans:
    for key in ("plan", "gpus", "peak_memory_bytes", "iteration_seconds"):
        assert key in p, f"missing {key}: {p}"
    degrees = {k: int(v) for k, v in re.findall(r"\b(dp|tp|pp|cp|ep)=(\d+)", p["plan"])}
    product = 1
    for axis in ("dp", "tp", "pp", "cp", "ep"):
        product *= degrees[axis]
        assert degrees[axis] == p[axis], f"{axis} of {p['plan']}"
    assert product == gpus == p["gpus"], f"{p['plan']} uses {product} GPUs"
    assert 0 < p["peak_memory_bytes"] <= capacity, f"{p['plan']} does not fit"
    assert p["plan"] not in seen, f"twice: {p['plan']}"
    seen.add(p["plan"])
times = [p["iteration_seconds"] for p in plans]
assert times == sorted(times), "not sorted by iteration time"
print(f"{len(plans)} plans, best {plans[0]['plan']}")
