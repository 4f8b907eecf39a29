"""Checks that the interleaved schedule's timeline draws each chunk with its
own step time: stage 0 of a 1F1B pipeline (the embedding and layers 0-3) runs
what chunks 0 (the embedding and layers 0-1) and 2 (layers 4-5, the same
size as 2-3) of the interleaved one run, so its forward and backward steps
last as long as the two chunks' together, but for the activation the
interleaved stage sends once more (a few percent here); and the interleaved
iteration is the shorter. (Drawing each chunk as long as a whole stage, as
the report once did, doubles the sum.)

    check_timeline.py ONE_F_ONE_B.json INTERLEAVED.json
"""
import json
import sys


def steps(path):
    with open(path) as f:
        r = json.load(f)
    lanes = r["pipeline"]["timeline"]
    out = {}
    for step in lanes[0]:  # stage 0
        key = (step["forward"], step["chunk"])
        out.setdefault(key, step["end"] - step["start"])
    return out, r["job"]["job_time"]["iteration"]["value"]


one, one_iter = steps(sys.argv[1])
inter, inter_iter = steps(sys.argv[2])
ok = True
for forward in (True, False):
    whole = one[(forward, 0)]
    parts = inter[(forward, 0)] + inter[(forward, 2)]
    same = 0 <= parts - whole <= 0.05 * whole
    ok &= same
    print(f"{'forward' if forward else 'backward'}: 1F1B stage step {whole:.6g} s, "
          f"interleaved chunks 0 + 2 {parts:.6g} s" + ("" if same else "  MISMATCH"))
print(f"iteration: 1F1B {one_iter:.6g} s, interleaved {inter_iter:.6g} s")
ok &= inter_iter < one_iter
sys.exit(0 if ok else 1)
