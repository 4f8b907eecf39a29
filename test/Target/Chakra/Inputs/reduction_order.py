"""Whether a rank's data-parallel gradient reductions run during or after
its backward: `reduction_order.py RANK.json` (a `--rank=R` dump) prints
"reductions during the backward" when one is issued before the last
backward node, "reductions after the backward" otherwise."""
import json
import sys

with open(sys.argv[1]) as f:
    names = [json.loads(line) for line in f if line.strip()][1:]
names = [n["name"] for n in names]
last_backward = max(i for i, n in enumerate(names) if n.startswith("bwd:"))
reductions = [i for i, n in enumerate(names)
              if n.split(":")[1] in ("reduce_scatter", "all_reduce")
              and n.split(":")[0] in ("grad", "opt", "fwd")]
print("reductions", "after" if min(reductions) > last_backward else "during",
      "the backward")
