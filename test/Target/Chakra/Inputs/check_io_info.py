"""Checks the inputs/outputs of a `--io-info` rank dump (`--rank=R` JSON
lines) as ASTRA-sim's memory tracker reads them: every node has both
attributes as string lists of (tensor, bytes) pairs; a node's output is one
tensor named after it; its inputs are outputs of nodes it depends on, with
their sizes. With --absent, checks that no node has them.

    check_io_info.py RANK.json [--absent]
"""
import json
import sys

with open(sys.argv[1]) as f:
    nodes = [json.loads(line) for line in f if line.strip()][1:]
absent = "--absent" in sys.argv


def lists(n):
    return {a["name"]: a["string_list"].get("values", [])
            for a in n.get("attr", []) if "string_list" in a}


if absent:
    print("io info on", sum(1 for n in nodes if "inputs" in lists(n)), "nodes")
    sys.exit(0)
written = {}
bad = reads = 0
for n in nodes:
    io = lists(n)
    nid = int(n.get("id", 0))
    if "inputs" not in io or "outputs" not in io:
        bad += 1
        continue
    ins, outs = io["inputs"], io["outputs"]
    if len(ins) % 2 or len(outs) % 2 or len(outs) > 2:
        bad += 1
    if outs:
        if outs[0] != f"t{nid}":
            bad += 1
        written[outs[0]] = int(outs[1])
    deps = {f"t{d}" for d in n.get("data_deps", [])}
    for name, size in zip(ins[::2], ins[1::2]):
        reads += 1
        if name not in deps or written.get(name, 0) != int(size):
            bad += 1
print(f"{len(nodes)} nodes, {len(written)} write a tensor, {reads} reads, "
      f"{bad} inconsistent")
