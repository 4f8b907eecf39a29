"""Checks the serving reports of serve-families.test against the closed
form of the KV cache written there."""
import json
import sys

prefix = sys.argv[1]
S, N, TP = 1024, 16, 2
# L layers, of which `sliding` keep only the last W positions; KV heads of
# Dh channels.
sizes = {"pythia-1.4b": dict(L=24, KV=16, Dh=128),
         "command-r-v01": dict(L=40, KV=64, Dh=128),
         "starcoder2-3b": dict(L=30, KV=2, Dh=128),
         "gpt-oss-20b": dict(L=24, KV=8, Dh=64, sliding=12, W=128),
         "glm-4.5-air": dict(L=46, KV=8, Dh=128),
         "phi-3.5-moe": dict(L=32, KV=8, Dh=128),
         "llama-4-scout-17b-16e": dict(L=48, KV=8, Dh=128),
         "qwen1.5-moe-a2.7b": dict(L=24, KV=16, Dh=128),
         "dbrx-base": dict(L=40, KV=8, Dh=128),
         "olmoe-1b-7b": dict(L=16, KV=16, Dh=128),
         "granite-3.0-1b-a400m": dict(L=24, KV=8, Dh=64),
         # 64 Mamba layers: 8192 channels of 16 states, and the
         # convolution's last 3 inputs.
         "falcon-mamba-7b": dict(L=0, KV=0, Dh=0,
                                 state=64 * 8192 * (16 + 3)),
         # 12 attention layers; 36 Gated DeltaNet layers, each request's
         # state there: 32 value heads of 128 x 128, and the convolution's
         # last 3 inputs of q, k (16 x 128 each) and v (32 x 128).
         "qwen3-next-80b-a3b": dict(L=12, KV=2, Dh=256,
                                    state=36 * (32 * 128 * 128
                                                + 3 * (2 * 16 * 128 + 32 * 128))),
         # 9 uses of the shared blocks, each with its own keys and values
         # (KV=32 heads of 2 x 2560 / 32 = 160); 54 Mamba-2 layers: 80 heads
         # of 64 x 64 states and the convolution's last 3 inputs of x (5120),
         # and of B and C (one group of 64 each: every tp rank holds them).
         "zamba2-2.7b": dict(L=9, KV=32, Dh=160,
                             state=54 * (80 * 64 * 64 + 3 * 5120),
                             replicated=54 * 3 * 2 * 64)}
models = sys.argv[2].split(",")
for model in models:
    m = sizes[model]
    sliding, W = m.get("sliding", 0), m.get("W", 0)
    positions = (m["L"] - sliding) * (S + N) + sliding * min(W, S + N)
    for B in (1, 8, 64):
        r = json.load(open(f"{prefix}.{model}.{B}.json"))
        cache = r["stages"][0]["memory"]["kv_cache"]["value"]
        want = ((2 * 2 * B * positions * m["KV"] * m["Dh"]
                 + 2 * B * m.get("state", 0)) // TP
                + 2 * B * m.get("replicated", 0))
        tpot = r["job"]["job_time"]["tpot"]["value"]
        print(f"{model} B={B} cache {'exact' if cache == want else (cache, want)}, "
              f"decode time {'positive' if tpot > 0 else tpot}")
