"""Compares the contraction FLOPs of a training iteration with the formula of
Narayanan et al. 2021 for GPT models:

  no recomputation:   72 B s l h^2 (1 + s/(6h) + V/(12 l h))
  full recomputation: 96 B s l h^2 (1 + s/(6h) + V/(16 l h))

on the formula's basis: contractions only (biases, norms, activations are
elementwise), attention without a causal discount, and without the score
recomputation inside flash-attention backward kernels (the formula assumes
the score matrix is kept).
"""
import json
import sys
from fractions import Fraction

recompute = sys.argv[1]
report = json.load(sys.stdin)
b = report["bindings"]
phases = report["functions"][0]["phases"]
ours = (phases["forward_contraction"]["value"]
        + phases["backward_contraction"]["value"]
        + phases["recompute_contraction"]["value"]
        - phases["attention_kernel_recompute"]["value"])
B, s, l, h, V = b["B"], b["S"], b["L"], b["D"], b["V"]
if recompute == "full":
    formula = 96 * B * s * l * h * h * (1 + Fraction(s, 6 * h) + Fraction(V, 16 * l * h))
else:
    formula = 72 * B * s * l * h * h * (1 + Fraction(s, 6 * h) + Fraction(V, 12 * l * h))
error = abs(Fraction(ours) - formula) / formula
print(f"ours {ours} formula {float(formula):.6e} relative error {float(error):.2e}")
print("within 0.5%" if error <= Fraction(5, 1000) else "OUTSIDE 0.5%")
