"""Checks a serving search's JSON output (stage-explore --mode=infer).

  check_serving.py JSON GPUS CAPACITY_BYTES MAX_TPOT_SECONDS MAX_BATCH

Independently of the tool: every plan runs on exactly the GPUs, fits the
capacity, meets the time-per-output-token bound, serves a batch that is a
power of two or the model's and that dp x ep x M divides; its decode tokens
per second per GPU is the batch over the time per output token and the
GPUs; the array is sorted by it, most first; several batches appear.
"""
import json
import re
import sys

plans = json.load(open(sys.argv[1]))
gpus, capacity = int(sys.argv[2]), float(sys.argv[3])
max_tpot, max_batch = float(sys.argv[4]), int(sys.argv[5])
assert isinstance(plans, list) and plans, "expected a non-empty JSON array"
seen = set()
for p in plans:
    degrees = {k: int(v) for k, v in re.findall(r"\b(dp|tp|pp|cp|ep)=(\d+)", p["plan"])}
    product = 1
    for axis in ("dp", "tp", "pp", "cp", "ep"):
        product *= degrees[axis]
    assert product == gpus == p["gpus"], f"{p['plan']} uses {product} GPUs"
    assert "decode-tokens=" in p["plan"] and "schedule" not in p["plan"], p["plan"]
    assert 0 < p["peak_memory_bytes"] <= capacity, f"{p['plan']} does not fit"
    assert 0 < p["tpot_seconds"] <= max_tpot, f"{p['plan']} is too slow"
    b = p["batch"]
    assert b == max_batch or (b & (b - 1)) == 0, f"batch {b}"
    assert b % (p["dp"] * p["ep"] * p["micro_batches"]) == 0, p
    expected = b / p["tpot_seconds"] / gpus
    assert abs(p["tokens_per_second_per_gpu"] - expected) <= 1e-6 * expected, p
    key = (p["plan"], b)
    assert key not in seen, f"twice: {key}"
    seen.add(key)
rates = [p["tokens_per_second_per_gpu"] for p in plans]
assert rates == sorted(rates, reverse=True), "not sorted by tokens/s per GPU"
batches = sorted({p["batch"] for p in plans})
assert len(batches) > 1, batches
print(f"{len(plans)} serving plans, batches {batches}, best {plans[0]['plan']} "
      f"at {plans[0]['batch']}")
