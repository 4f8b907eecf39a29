"""Checks the training FLOPs of a state-space model against closed forms.

Usage: check_ssm_flops.py A.json B.json: training reports (one rank, no
recomputation) of one Mamba or Mamba-2 model at two state sizes Ns.

Contractions: every weight in a matmul costs 6 FLOPs per token (2 forward,
4 backward), the LM head included; Mamba's are in_proj (x and z) and
out_proj, 3 D Di, x_proj, Di (R + 2 Ns), and dt_proj, R Di. Mamba-2's are
in_proj, D (2 Hm P + 2 G Ns + Hm), and out_proj, Hm P D, and its chunked
scan adds per token and layer 2 Q Ns G + 2 Q P Hm + 4 Ns P Hm forward and
twice that backward.

The selective scan (Mamba) costs 9 FLOPs per token, channel and state
forward and 27 backward (A = -exp(A_log) inside the kernel is not counted).
So one more state per channel adds 36 L Di T FLOPs off the matrix units,
T = B S tokens.
"""
import json
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])


def flops(report, key):
    return report["job"]["job_flops"][key]["value"]


def weights_in_matmuls(x):
    L, D, V = x["L"], x["D"], x["V"]
    if "Di" in x:  # Mamba
        Di, R, Ns = x["Di"], x["R"], x["Ns"]
        return L * (3 * D * Di + Di * (R + 2 * Ns) + R * Di) + V * D
    Hm, P, G, Ns = x["Hm"], x["P"], x["G"], x["Ns"]
    return L * (D * (2 * Hm * P + 2 * G * Ns + Hm) + Hm * P * D) + V * D


def ssd(x):
    if "Di" in x:
        return 0
    Q, Ns, G, P, Hm = x["Q"], x["Ns"], x["G"], x["P"], x["Hm"]
    return 2 * Q * Ns * G + 2 * Q * P * Hm + 4 * Ns * P * Hm


ok = True
for r in (a, b):
    x = r["bindings"]
    T = x["B"] * x["S"]
    expected = 6 * T * weights_in_matmuls(x) + 3 * T * x["L"] * ssd(x)
    got = flops(r, "contraction")
    ok &= got == expected
    print(f"Ns={x['Ns']}: contraction FLOPs {got} (closed form {expected})")

xa, xb = a["bindings"], b["bindings"]
if "Di" in xa:
    T = xa["B"] * xa["S"]
    other = [flops(r, "forward") + flops(r, "backward") - flops(r, "contraction")
             for r in (a, b)]
    expected = xa["L"] * xa["Di"] * (xb["Ns"] - xa["Ns"]) * 36 * T
    ok &= other[1] - other[0] == expected
    print(f"scan: {other[1] - other[0]} more FLOPs off the matrix units "
          f"(closed form {expected})")
print("closed forms hold" if ok else "closed forms FAIL")
sys.exit(0 if ok else 1)
