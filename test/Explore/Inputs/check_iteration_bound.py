"""The search's lower bounds of the iteration and of the peak memory are
sound, and skipping plans by the iteration's changes none of the best plans.

  check_iteration_bound.py ALL_JSON [TOP_JSON...]

ALL_JSON: every plan that fits, evaluated (a --top above their number);
each TOP_JSON: a search for its length of best plans, which skipped the
plans whose bound exceeds the longest of them. Every plan's bound is
positive and at most its iteration (the report's), and its peak bound (0:
none) at most its peak; each TOP_JSON is the head of ALL_JSON, plan for plan
and number for number.
"""
import json
import sys

plans = json.load(open(sys.argv[1]))
assert plans, "no plan"
schedules = set()
for p in plans:
    bound, time = p["iteration_bound_seconds"], p["iteration_seconds"]
    assert 0 < bound <= time * (1 + 1e-9), f"{p['plan']}: bound {bound} s, iteration {time} s"
    peak, peakBound = p["peak_memory_bytes"], p["peak_memory_bound_bytes"]
    assert 0 <= peakBound <= peak, f"{p['plan']}: peak bound {peakBound} B, peak {peak} B"
    schedules.add(p["schedule"])
tightest = max(p["iteration_bound_seconds"] / p["iteration_seconds"] for p in plans)
for path in sys.argv[2:]:
    top = json.load(open(path))
    assert top == plans[: len(top)], f"{path}: not the best {len(top)} of every plan"
peakBounded = [p for p in plans if p["peak_memory_bound_bytes"] > 0]
peakTightest = max((p["peak_memory_bound_bytes"] / p["peak_memory_bytes"]
                    for p in peakBounded), default=0)
print(f"bound sound: {len(plans)} plans, {len(schedules)} schedules, "
      f"tightest {tightest:.3f}; {len(sys.argv) - 2} skipping searches agree")
print(f"peak bound sound: {len(peakBounded)} plans bounded, "
      f"{len({p['schedule'] for p in peakBounded})} schedules, "
      f"tightest {peakTightest:.3f}")
