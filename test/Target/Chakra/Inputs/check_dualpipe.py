"""Checks a DualPipe trace pair against the model and against 1F1B.

    check_dualpipe.py CONFIG.json M DUAL_FIRST.json DUAL_LAST.json \
        ONEF1B_FIRST.json ONEF1B_LAST.json

The four dumps (`stage-translate --stage-to-chakra --rank=R`) are one rank
of the first and one of the last pipeline stage of a pp=2, tp=1, zero=0 plan
with M micro-batches. Under DualPipe rank 0 holds stage 0 and the copy of
stage 1, the last rank stage 1 and the copy of stage 0, so that:

- before the update the two ranks exchange every gradient: each sends what
  it receives, and together they send 2 bytes (bf16) per parameter of both
  copies, 4 P, with P the Llama parameter count of CONFIG (closed form);
- the first copy runs micro-batches [0, M/2), the mirrored one [M/2, M):
  the forward activations the first rank receives (for the copy of stage 1)
  are of the second half, the last rank's of the first half (a send/recv
  tag is channel * M + micro-batch);
- each micro-batch runs forward and backward once, so the two ranks'
  forward and backward FLOPs (weight-gradient steps included) add up to
  1F1B's.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()][1:]


def attr(n, name):
    for a in n.get("attr", []):
        if a["name"] == name:
            return int(next(v for k, v in a.items() if k.endswith("_val")))
    return 0


def phase(n):
    return n["name"].split(":", 1)[0]


config = json.load(open(sys.argv[1]))
M = int(sys.argv[2])
dual = [load(p) for p in sys.argv[3:5]]
onef = [load(p) for p in sys.argv[5:7]]

D, F = config["hidden_size"], config["intermediate_size"]
H, KV = config["num_attention_heads"], config["num_key_value_heads"]
Dh, V, L = config["head_dim"], config["vocab_size"], config["num_hidden_layers"]
layer = 2 * D * H * Dh + 2 * D * KV * Dh + 3 * D * F + 2 * D
P = L * layer + 2 * V * D + D

sent = [sum(attr(n, "comm_size") for n in r if n["name"] == "opt:send")
        for r in dual]
received = [sum(attr(n, "comm_size") for n in r if n["name"] == "opt:recv")
            for r in dual]
if sent != received[::-1]:
    sys.exit(f"the exchange is not symmetric: sent {sent}, received "
             f"{received}")
print("gradient exchange:", "2 bytes per parameter of both copies"
      if sum(sent) == 4 * P else f"{sum(sent)} bytes, not 4 P = {4 * P}")

for name, r in (("first", dual[0]), ("last", dual[1])):
    batches = sorted({attr(n, "comm_tag") % M for n in r
                      if n["name"] == "fwd:recv"})
    print(f"{name} rank receives forwards of micro-batches", batches)


def model_flops(ranks):
    return sum(attr(n, "num_ops") for r in ranks for n in r
               if phase(n) in ("fwd", "bwd", "wgrad")
               and n["type"] == "COMP_NODE")


a, b = model_flops(dual), model_flops(onef)
print("forward and backward FLOPs:", "as 1F1B's" if a == b else f"{a} vs {b}")
