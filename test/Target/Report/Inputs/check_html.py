"""Checks that the charts of an HTML report show the numbers of the JSON
report of the same program.

    check_html.py REPORT.html REPORT.json

Every bar (`rect.bar`) names its number by data-stage and data-key
(`memory.weights`, `communication.all_gather_tp`); every timeline step
(`g.step`) its stage, micro-batch and times. Each must equal the JSON's.
"""
import json
import sys
from html.parser import HTMLParser


class Charts(HTMLParser):
    def __init__(self):
        super().__init__()
        self.bars, self.steps, self.svgs = [], [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svgs += 1
        if tag == "rect" and a.get("class") == "bar":
            self.bars.append(a)
        if tag == "g" and a.get("class") == "step":
            self.steps.append(a)


html_path, json_path = sys.argv[1], sys.argv[2]
charts = Charts()
with open(html_path) as f:
    charts.feed(f.read())
with open(json_path) as f:
    report = json.load(f)

stages = {s["stage"]: s for s in report["stages"]}
for bar in charts.bars:
    section, key = bar["data-key"].split(".", 1)
    want = stages[int(bar["data-stage"])][section][key]["value"]
    if float(bar["data-value"]) != float(want):
        sys.exit(f"bar {bar['data-key']} of stage {bar['data-stage']}: "
                 f"{bar['data-value']} in the chart, {want} in the JSON")
# A serving stage's memory bars stack to its peak: the weights, the caches
# and the working set of the phase at the peak (a prefill's or a decode
# step's, not both).
if report["job"].get("serving"):
    for stage, s in stages.items():
        total = sum(float(b["data-value"]) for b in charts.bars
                    if b["data-key"].startswith("memory.")
                    and int(b["data-stage"]) == stage)
        if total != float(s["memory"]["peak"]["value"]):
            sys.exit(f"stage {stage}: memory bars sum to {total}, the peak "
                     f"is {s['memory']['peak']['value']}")
    print(f"{charts.svgs} charts: {len(charts.bars)} bars match the JSON "
          f"report; each stage's memory bars stack to its peak")
    sys.exit(0)
timeline = report["pipeline"]["timeline"]
for step in charts.steps:
    s = int(step["data-stage"])
    match = [t for t in timeline[s]
             if t["microbatch"] == int(step["data-microbatch"])
             and t["chunk"] == int(step["data-chunk"])
             and int(t["forward"]) == int(step["data-forward"])]
    if len(match) != 1 or abs(match[0]["start"] - float(step["data-start"])) > \
            1e-9 * max(1.0, abs(match[0]["start"])):
        sys.exit(f"timeline step {step} does not match the JSON")
want_steps = sum(len(s) for s in timeline)
if len(charts.steps) != want_steps:
    sys.exit(f"{len(charts.steps)} timeline steps, the JSON has {want_steps}")
print(f"{charts.svgs} charts: {len(charts.bars)} bars and "
      f"{len(charts.steps)} steps match the JSON report")
