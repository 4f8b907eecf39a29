"""Checks a rank's trace under a schedule that splits the backward.

    check_weight_steps.py SPLIT.json WHOLE.json MICROBATCHES

SPLIT.json and WHOLE.json are `stage-translate --stage-to-chakra --rank=R`
dumps of the same rank and plan, scheduled with and without the split (the
first stage of a 2-stage pipeline, whose input-gradient steps are always
apart). Checks that the split moves kernels and loses none (same FLOPs per
kernel kind), that there is one weight-gradient step per micro-batch, and
that the k-th weight-gradient step reads what the k-th input-gradient step
computed and nothing of another input-gradient step; counts the weight-
gradient contractions that read their output gradient from it (all of them
should). Prints a summary.
"""
import collections
import json
import sys


def load(path):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    nodes = lines[1:]  # the first line is the metadata
    for i, n in enumerate(nodes):
        n["id"] = int(n.get("id", 0))
        assert n["id"] == i, f"{path}: node {i} has id {n['id']}"
    return nodes


def flops(n):
    for a in n.get("attr", []):
        if a["name"] == "num_ops":
            return int(a["int64_val"])
    return 0


def phase(n):
    return n["name"].split(":", 1)[0]


def kernel(n):
    return n["name"].split(":", 1)[1]


split, whole = load(sys.argv[1]), load(sys.argv[2])
M = int(sys.argv[3])

# The same kernels, their FLOPs only moved from backward to weight steps.
def per_kernel(nodes, fold):
    out = collections.Counter()
    for n in nodes:
        p = phase(n)
        if p in fold:
            p = fold[p]
        out[(p, kernel(n))] += flops(n)
    return out

a = per_kernel(split, {"wgrad": "bwd", "acc": "acc"})
b = per_kernel(whole, {})
acc_a = a.pop(("acc", "grad_accumulate"), 0)
acc_b = b.pop(("acc", "grad_accumulate"), 0)
if a != b:
    sys.exit(f"kernels differ: {sorted(set(a.items()) ^ set(b.items()))}")
if acc_a != acc_b:
    sys.exit(f"gradient accumulation differs: {acc_a} vs {acc_b} FLOPs")

# Steps: runs of one phase (accumulations, recomputation and reductions
# belong to the step they follow).
steps = []
for n in split:
    p = phase(n)
    if p in ("acc", "rc", "grad"):
        p = steps[-1][0] if steps else p
    if not steps or steps[-1][0] != p:
        steps.append((p, []))
    steps[-1][1].append(n["id"])
inputs = [set(ids) for p, ids in steps if p == "bwd"]
weights = [ids for p, ids in steps if p == "wgrad"]
if len(inputs) != M or len(weights) != M:
    sys.exit(f"{len(inputs)} input-gradient and {len(weights)} weight-gradient "
             f"steps for {M} micro-batches")
all_inputs = set().union(*inputs)
reads = contractions = 0
for k, ids in enumerate(weights):
    for i in ids:
        n = split[i]
        if phase(n) != "wgrad":
            continue
        deps = {int(d) for d in n.get("data_deps", [])}
        own = deps & inputs[k]
        other = (deps & all_inputs) - inputs[k]
        if other:
            sys.exit(f"weight step {k}: node {i} ({n['name']}) reads input-"
                     f"gradient nodes of another micro-batch: {sorted(other)}")
        if kernel(n) == "einsum":
            contractions += 1
            reads += bool(own)
print(f"{M} weight-gradient steps, {contractions} contractions, {reads} "
      f"reading their micro-batch's output gradients; kernels and FLOPs as "
      f"without the split")
