"""Compares the JSON reports of one plan under several pipeline schedules.

    compare_schedules.py PP NAME=REPORT.json ...

For each schedule prints whether its bubble and iteration time are below
the first report's, the most micro-batches any stage holds in flight (in
chunk steps, and in whole stages: a ZB-V chunk is half a stage, a DualPipe
chunk a whole copy of one), whether its timeline splits the backward steps,
and the parameters all stages hold over the first report's (DualPipe keeps
two copies).
"""
import json
import sys

pp = int(sys.argv[1])
first = None
params = None
below = lambda a, b: "below" if a < b else "not below"
for arg in sys.argv[2:]:
    name, path = arg.split("=", 1)
    with open(path) as f:
        r = json.load(f)
    p = r["pipeline"]
    in_flight = max(s["memory"]["in_flight"]["value"] for s in r["stages"])
    iteration = r["stages"][0]["time"]["iteration"]["value"]
    first = first or (p["bubble"], iteration)
    parts = {step.get("part", "whole") for stage in p["timeline"]
             for step in stage if not step["forward"]}
    chunk = 1 if p["schedule"] == "dualpipe" else 1 / p["virtual_stages"]
    whole = in_flight * chunk
    held = sum(s["memory"]["parameters"]["value"] for s in r["stages"])
    params = params or held
    print(f"{name}: bubble {below(p['bubble'], first[0])}, iteration "
          f"{below(iteration, first[1])} the first's; in flight {in_flight} "
          f"chunk steps, {whole:g} whole stages ({whole / pp:g} pp); "
          f"backward {'split' if 'weight_grad' in parts else 'whole'}; "
          f"parameters {held / params:g}x")
