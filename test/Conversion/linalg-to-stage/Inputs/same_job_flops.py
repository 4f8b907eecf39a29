"""Checks that --stage-to-report JSON reports have the same whole-job FLOPs
per iteration, and prints them: `equal FLOPs N`."""
import json
import sys

flops = [json.load(open(p))["job"]["job_flops"]["total"]["value"]
         for p in sys.argv[1:]]
if len(set(flops)) != 1 or not flops[0] > 0:
    sys.exit("FLOPs differ: " + " ".join(map(str, flops)))
print("equal FLOPs", flops[0])
