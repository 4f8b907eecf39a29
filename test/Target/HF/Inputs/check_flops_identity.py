"""Checks the forward-FLOPs identity of a dense decoder on a JSON report.

Per token, the contraction FLOPs of the forward pass equal twice the weights
that take part in a matmul (LM head included, embedding lookup not) plus the
attention term 4 * L * S * H * Dh for scores and values, counted without a
causal discount. With `--sliding N`, N of the layers attend over a window of
W keys instead of S: their term is 4 * W * H * Dh each.
"""
import json
import sys

sliding = int(sys.argv[sys.argv.index("--sliding") + 1]) if "--sliding" in sys.argv else 0
report = json.load(sys.stdin)
b = report["bindings"]
fn = report["functions"][0]
tokens = b["B"] * b["S"]
contraction = fn["flops"]["contraction"]["value"]
weights = fn["parameters"]["in_contractions"]["value"]
keys = (b["L"] - sliding) * b["S"] + sliding * b.get("W", 0)
attention = 4 * keys * b["H"] * b["Dh"]
if contraction % tokens:
    sys.exit(f"contraction FLOPs {contraction} not a multiple of {tokens} tokens")
per_token = contraction // tokens
expected = 2 * weights + attention
verdict = "holds" if per_token == expected else "FAILS"
print(f"identity {verdict}: {per_token} = 2*{weights} + {attention}")
sys.exit(0 if per_token == expected else 1)
