"""Validates a `stage-trace timeline` file against the trace-event format
(Chrome's "Trace Event Format": a `traceEvents` list of complete events,
`ph` "X", with `name`, `ts` and `dur` in microseconds, `pid` and `tid`, and
`ph` "M" metadata naming processes and threads) and against the traces it
replays: on each rank the compute thread runs one node at a time, and no
node starts before the nodes it depends on (from `stage-trace show
--format=json`) have ended.

    check_timeline.py TIMELINE.json SHOW_RANK_A.json [SHOW_RANK_B.json ...]

Prints a summary line per rank.
"""
import json
import sys

t = json.load(open(sys.argv[1]))
events = t["traceEvents"]
assert isinstance(events, list) and events, "no traceEvents"
spans = {}
names = {}
for e in events:
    assert e["ph"] in ("X", "M"), e
    assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
    if e["ph"] == "M":
        assert e["name"] in ("process_name", "thread_name"), e
        names[(e["pid"], e["tid"], e["name"])] = e["args"]["name"]
        continue
    for k in ("name", "ts", "dur", "cat", "args"):
        assert k in e, (k, e)
    assert e["ts"] >= 0 and e["dur"] >= 0, e
    spans.setdefault(e["pid"], {})[e["args"]["id"]] = e
end = max(e["ts"] + e["dur"] for r in spans.values() for e in r.values())
it = t["otherData"]["iteration_seconds"] * 1e6
assert end <= it * (1 + 1e-9), (end, it)
eps = 1e-6
for path in sys.argv[2:]:
    show = json.load(open(path))
    r = show["rank"]
    mine = spans[r]
    assert names[(r, 0, "process_name")] == f"rank {r}"
    assert names[(r, 0, "thread_name")] == "compute"
    assert len(mine) == show["node_count"], (len(mine), show["node_count"])
    compute = sorted((e["ts"], e["ts"] + e["dur"]) for e in mine.values()
                     if e["tid"] == 0)
    overlaps = sum(1 for a, b in zip(compute, compute[1:]) if b[0] < a[1] - eps)
    early = 0
    for n in show["nodes"]:
        start = mine[n["id"]]["ts"]
        for d in n["deps"]:
            early += start < mine[d]["ts"] + mine[d]["dur"] - eps
    print(f"rank {r}: {len(mine)} nodes, compute overlaps {overlaps}, "
          f"starts before a dependency {early}")
