"""Checks what a rank's trace overlaps against the plan's overlap option.

    check_overlap.py ALL.json GRAD_TP.json GRAD.json LAYERS MICROBATCHES

Three `--rank=R` dumps of one Llama plan with ZeRO-3 (tp and dp both > 1),
built with overlap=all, overlap=grad,tp and overlap=grad. Prints:
- per dump, whether every collective waits for the rank's collective before
  it (one chain per rank) or groups have chains of their own (`tp`);
- whether `fsdp` coalesced a layer's collectives as a Llama layer predicts:
  its 9 weights (2 norms, q, k, v, o, gate, up, down) gathered by one
  all-gather forward and one backward, the 7 projections' gradients
  reduce-scattered by one (the norms' gradients go on to a tensor-parallel
  all-reduce first), so that each layer and micro-batch has 8 + 8 + 6
  collectives fewer;
- how many layer gathers wait for a compute node of the layer before (the
  prefetch one layer ahead): all but the first of each layer stack, forward
  and backward, in every micro-batch.
"""
import sys


def load(path):
    import json
    with open(path) as f:
        nodes = [json.loads(line) for line in f if line.strip()][1:]
    for i, n in enumerate(nodes):
        n["id"] = i
    return nodes


def attr(n, name):
    for a in n.get("attr", []):
        if a["name"] == name:
            return next(v for k, v in a.items() if k != "name")
    return None


def collective(n):
    return n["type"] == "COMM_COLL_NODE"


def independent_of_other_groups(nodes):
    """Collectives that do not wait for the rank's collective before them
    when that one is of another group (one chain per rank: none)."""
    count, previous = 0, None
    for n in nodes:
        if not collective(n):
            continue
        deps = {int(d) for d in n.get("data_deps", []) + n.get("ctrl_deps", [])}
        if previous is not None and previous["id"] not in deps and \
                attr(previous, "pg_name") != attr(n, "pg_name"):
            count += 1
        previous = n
    return count


all_, grad_tp, grad = (load(p) for p in sys.argv[1:4])
L, M = int(sys.argv[4]), int(sys.argv[5])
for name, nodes in (("all", all_), ("grad,tp", grad_tp), ("grad", grad)):
    free = independent_of_other_groups(nodes)
    print(f"{name}: " + ("every collective waits for the rank's last" if
                         free == 0 else "groups issue on chains of their own"))

fewer = sum(map(collective, grad_tp)) - sum(map(collective, all_))
expected = (8 + 8 + 6) * L * M
print("fsdp: one collective per layer and kind" if fewer == expected else
      f"fsdp: {fewer} collectives fewer, a Llama layer predicts {expected}")

prefetched = 0
for n in all_:
    if collective(n) and n["name"].endswith("all_gather"):
        deps = [all_[int(d)] for d in n.get("data_deps", [])]
        prefetched += any(d["type"] == "COMP_NODE" for d in deps) and \
            attr(n, "comm_size") and int(attr(n, "comm_size")) > 0
expected = 2 * (L - 1) * M
print("prefetch: every layer's gathers wait for the layer before" if
      prefetched >= expected else
      f"prefetch: {prefetched} gathers wait for compute, expected {expected}")
