"""Checks the serving reports of serve-families.test against the closed
form of the KV cache written there."""
import json
import sys

prefix = sys.argv[1]
sizes = {"pythia-1.4b": (24, 16, 128), "command-r-v01": (40, 64, 128),
         "starcoder2-3b": (30, 2, 128)}
for model, (L, KV, Dh) in sizes.items():
    for B in (1, 8, 64):
        r = json.load(open(f"{prefix}.{model}.{B}.json"))
        cache = r["stages"][0]["memory"]["kv_cache"]["value"]
        want = 2 * 2 * L * B * (1024 + 16) * KV * Dh // 2
        tpot = r["job"]["job_time"]["tpot"]["value"]
        print(f"{model} B={B} cache {'exact' if cache == want else (cache, want)}, "
              f"decode time {'positive' if tpot > 0 else tpot}")
