"""Ruling plans out by the lower bound of their peak memory drops no plan
that fits.

  check_peak_bound.py CAPACITY_BYTES SMALL_JSON LARGE_JSON

SMALL_JSON: every plan that fits a device of CAPACITY_BYTES (an exhaustive
search); LARGE_JSON: the same search on a device every plan fits. The plans
of LARGE_JSON whose peak is at most the capacity are exactly SMALL_JSON's,
number for number; some of LARGE_JSON's other plans have a peak bound above
the capacity (the bound rules plans out), and no bound exceeds its peak.
"""
import json
import sys

capacity = float(sys.argv[1])
small = json.load(open(sys.argv[2]))
large = json.load(open(sys.argv[3]))
fitting = [p for p in large if p["peak_memory_bytes"] <= capacity]
assert small == fitting, "the plans that fit differ"
for p in large:
    assert p["peak_memory_bound_bytes"] <= p["peak_memory_bytes"], p["plan"]
ruled = [p for p in large if p["peak_memory_bound_bytes"] > capacity]
assert ruled, "the bound rules no plan out"
print(f"peak bound drops no plan: {len(small)} fit, {len(ruled)} of the "
      f"{len(large) - len(small)} others ruled out by the bound")
