"""Counts a rank's forward steps that a backward step right after does not
wait for: DualPipe's overlapped pairs, whose backward starts with the
forward rather than after it. `paired_steps.py RANK.json` (a `--rank=R`
dump) prints "paired steps: N" (0 when every step waits for the one before,
as in 1F1B)."""
import json
import sys

with open(sys.argv[1]) as f:
    nodes = [json.loads(line) for line in f if line.strip()][1:]
phase = [n["name"].split(":", 1)[0] for n in nodes]
pairs = 0
for i in range(1, len(nodes)):
    if phase[i] != "bwd" or phase[i - 1] != "fwd":
        continue
    # The backward step's first node, and the forward step's last.
    deps = {int(d) for d in nodes[i].get("data_deps", []) +
            nodes[i].get("ctrl_deps", [])}
    pairs += (i - 1) not in deps
print("paired steps:", pairs)
