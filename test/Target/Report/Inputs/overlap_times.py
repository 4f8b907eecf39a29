"""Compares the roofline times of one plan's reports under two overlap
settings: `overlap_times.py OFF.json ON.json` prints the communication both
report (the same bytes, the same seconds), whether each hides any of it
behind compute, and whether the iteration with overlap is shorter."""
import json
import sys

off, on = (json.load(open(p))["stages"][0]["time"] for p in sys.argv[1:3])
print("communication", "equal" if off["communication"]["value"] ==
      on["communication"]["value"] else "differs")
for name, t in (("off", off), ("on", on)):
    print(name, "hides", "some" if t["hidden"]["value"] > 0 else "none")
print("iteration with overlap",
      "shorter" if on["iteration"]["value"] < off["iteration"]["value"]
      else "not shorter")
