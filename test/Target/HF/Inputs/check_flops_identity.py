"""Checks the forward-FLOPs identity of a dense decoder on a JSON report.

Per token, the contraction FLOPs of the forward pass equal twice the weights
that take part in a matmul (LM head included, embedding lookup not) plus the
attention term 4 * L * S * H * Dh for scores and values, counted without a
causal discount.
"""
import json
import sys

report = json.load(sys.stdin)
b = report["bindings"]
fn = report["functions"][0]
tokens = b["B"] * b["S"]
contraction = fn["flops"]["contraction"]["value"]
weights = fn["parameters"]["in_contractions"]["value"]
attention = 4 * b["L"] * b["S"] * b["H"] * b["Dh"]
if contraction % tokens:
    sys.exit(f"contraction FLOPs {contraction} not a multiple of {tokens} tokens")
per_token = contraction // tokens
expected = 2 * weights + attention
verdict = "holds" if per_token == expected else "FAILS"
print(f"identity {verdict}: {per_token} = 2*{weights} + {attention}")
sys.exit(0 if per_token == expected else 1)
