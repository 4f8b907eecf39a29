"""Checks what a sliding window saves in a training step.

Usage: check_window_factor.py WINDOWED.json FULL.json (training reports of
one model with and without `sliding_window`, every layer sliding).

Flash attention over S keys per query costs, per score (query x key x
head): forward 4 Dh contraction FLOPs (Q K^T and P V) and 4 others (scale,
max, exp, sum); backward 10 Dh (dV, dP, dQ, dK and the recomputed Q K^T)
and 6 others. A window of W keys keeps W of the S scores of each query, so
the step saves L B S (S - W) H (14 Dh + 10) FLOPs, and the recomputed
scores shrink by the factor W / S.
"""
import json
import sys
from fractions import Fraction

windowed, full = (json.load(open(p)) for p in sys.argv[1:3])
b = windowed["bindings"]
L, B, S, H, Dh, W = (b[k] for k in ("L", "B", "S", "H", "Dh", "W"))


def step(report):
    f = report["job"]["job_flops"]
    return f["forward"]["value"] + f["backward"]["value"]


saved = step(full) - step(windowed)
expected = L * B * S * (S - W) * H * (14 * Dh + 10)
recompute = Fraction(windowed["job"]["job_flops"]["attention_kernel_recompute"]["value"],
                     full["job"]["job_flops"]["attention_kernel_recompute"]["value"])
ok = saved == expected and recompute == Fraction(W, S)
print(f"window saves {saved} FLOPs (closed form {expected}); "
      f"recomputed scores x{recompute} (W/S = {Fraction(W, S)}): "
      f"{'holds' if ok else 'FAILS'}")
sys.exit(0 if ok else 1)
