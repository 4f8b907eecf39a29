"""Contraction and optimizer FLOPs of one rank of a training step, from a
--stage-to-report JSON report."""
import json
import sys

f = json.load(sys.stdin)["stages"][0]["flops"]
print("contraction", f["contraction"]["value"])
print("optimizer", f["optimizer"]["value"])
