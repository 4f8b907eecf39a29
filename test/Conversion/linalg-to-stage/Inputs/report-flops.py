"""Contraction and optimizer FLOPs of a --stage-to-report JSON report."""
import json
import sys

f = json.load(sys.stdin)["functions"][0]
print("contraction", f["flops"]["contraction"]["value"])
print("optimizer", f["phases"]["optimizer"]["value"])
