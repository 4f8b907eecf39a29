"""Checks that a hybrid's training step costs the sum of its layers' kinds.

Usage: check_layer_sum.py HYBRID AD AE MD ME (training reports of Jamba-v0.1
and of the same model with every layer attention (A) or Mamba (M), each
with dense (D) or MoE (E) MLPs). With F0 the work outside the layers and
a, m, d, e one layer's mixer or MLP, the uniform models cost F0 + 32 (a or
m) + 32 (d or e), and Jamba-v0.1's 4 attention and 28 Mamba mixers with 16
dense and 16 MoE MLPs cost F0 + 4 a + 28 m + 16 d + 16 e =
(AD + AE + 7 MD + 7 ME) / 16.
"""
import json
import sys
from fractions import Fraction

reports = [json.load(open(p)) for p in sys.argv[1:6]]
for key in ("forward", "backward", "total"):
    hybrid, ad, ae, md, me = (r["job"]["job_flops"][key]["value"] for r in reports)
    expected = Fraction(ad + ae + 7 * md + 7 * me, 16)
    print(f"{key}: {hybrid} (sum of the kinds {expected})")
    if hybrid != expected:
        sys.exit("the step is NOT the sum of its layer kinds")
print("the step is the sum of its layer kinds")
