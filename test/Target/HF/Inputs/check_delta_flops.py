"""Checks the training FLOPs of a Qwen3-Next whose every layer is Gated
DeltaNet linear attention with a dense SwiGLU MLP against a closed form.

Usage: check_delta_flops.py REPORT.json (one rank, no recomputation).

Every weight in a matmul costs 6 FLOPs per token (2 forward, 4 backward),
the LM head included: per layer in_proj_qkvz and in_proj_ba, D (2 G N + 2 Hm
P + 2 Hm), out_proj Hm P D, the MLP 3 D F. The chunked delta rule (Yang et
al. 2024, chunk Q) adds per token, layer and value head, forward: K K^T,
the WY factor W and Q K^T within the chunk, 2 Q N each; U and the masked
product with the values, 2 Q P each; W S, Q S and the state update K^T U,
2 N P each; its backward twice that.
"""
import json
import sys

r = json.load(open(sys.argv[1]))
x = r["bindings"]
T = x["B"] * x["S"]
L, D, V, F = x["L"], x["D"], x["V"], x["F"]
Hm, P, G, N, Q = x["Hm"], x["P"], x["G"], x["Ns"], x["Q"]
weights = L * (D * (2 * G * N + 2 * Hm * P + 2 * Hm) + Hm * P * D
               + 3 * D * F) + V * D
delta = Hm * (6 * Q * N + 4 * Q * P + 6 * N * P)
expected = 6 * T * weights + 3 * T * L * delta
got = r["job"]["job_flops"]["contraction"]["value"]
print(f"contraction FLOPs {got} (closed form {expected})")
print("closed form holds" if got == expected else "closed form FAILS")
sys.exit(0 if got == expected else 1)
