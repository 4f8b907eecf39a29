"""The lower bounds of model states and of the peak rule out no plan that
fits.

  check_bound.py ALL_JSON SUMMARY CAPACITY_BYTES

ALL_JSON: every plan, searched with room for all; SUMMARY: the Markdown
summary of the same search at CAPACITY. The plans that fit there are
exactly those whose peak is within CAPACITY, and those over it by their
model states alone (found by evaluating them or by the states bound) are
those whose states exceed it, but those the peak bound ruled out first.
"""
import json
import re
import sys

plans = json.load(open(sys.argv[1]))
summary = open(sys.argv[2]).read()
capacity = float(sys.argv[3])
fit = int(re.search(r"(\d+) fit the device", summary).group(1))
states = int(re.search(r"\((\d+) by their model states alone", summary).group(1))
m = re.search(r"(\d+) more do not fit by a lower bound of their model", summary)
bound = int(m.group(1)) if m else 0
m = re.search(r"(\d+) more do not fit by a lower bound of their pipeline", summary)
peak_bound = int(m.group(1)) if m else 0
want_fit = sum(p["peak_memory_bytes"] <= capacity for p in plans)
want_states = sum(p["model_states_bytes"] > capacity for p in plans)
assert fit == want_fit, f"{fit} fit, the full search says {want_fit}"
assert states + bound <= want_states <= states + bound + peak_bound, \
    f"{states} + {bound} over by states ({peak_bound} by the peak bound), " \
    f"the full search says {want_states}"
assert bound > 0, "the bound ruled nothing out: the check is vacuous"
print(f"bound sound: {bound} ruled out before compiling, {fit} fit")
