"""Checks a request-stream search (stage-explore --requests) against the
serving report of its best plan.

usage: check_stream_search.py BIN SEARCH.json MODEL.mlir RATE STREAM SLO WORK

STREAM is the synthetic workload without its rate (`count=...,prompt=...`),
RATE the rate the search was given. The best plan is compiled by hand with
its stage-infer options and served by `stage-translate --stage-to-report
--requests` with its scheduler: at the workload's rate and at its goodput
(the workload sped up to it) the report must meet the SLO, and its numbers
at the workload's rate must be the search's. Plans are ordered by goodput
per GPU, which is goodput over the GPUs.
"""
import json
import os
import subprocess
import sys

bin_dir, search, model, rate, stream, slo, work = sys.argv[1:8]
rate = float(rate)
plans = json.load(open(search))


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


per_gpu = [p["goodput_requests_per_second_per_gpu"] for p in plans]
if per_gpu != sorted(per_gpu, reverse=True):
    fail("plans not ordered by goodput per GPU: %s" % per_gpu)
for p in plans:
    if abs(p["goodput_requests_per_second"] / p["gpus"] -
           p["goodput_requests_per_second_per_gpu"]) > 1e-9:
        fail("goodput per GPU is not goodput over the GPUs: %s" % p)
best = plans[0]
step = work + ".step.mlir"
subprocess.run([os.path.join(bin_dir, "stage-opt"), model, "-o", step,
                "--stage-infer=" + best["stage_infer"]], check=True)


def report(r):
    out = subprocess.run(
        [os.path.join(bin_dir, "stage-translate"), step, "--stage-to-report",
         "--device=h100", "--format=json",
         "--requests=poisson:rate=%r,%s" % (r, stream),
         "--scheduler=" + best["scheduler"], "--slo=" + slo],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)["requests"]


own = report(rate)
if own["slo"]["attainment"] != best["slo_attainment"]:
    fail("attainment %s, the search said %s" %
         (own["slo"]["attainment"], best["slo_attainment"]))
if own["tpot_seconds"]["p99"] != best["tpot_seconds"]["p99"]:
    fail("TPOT p99 %s, the search said %s" %
         (own["tpot_seconds"]["p99"], best["tpot_seconds"]["p99"]))
if own["slo"]["met"] != 1:
    fail("the best plan does not meet the SLO at the workload's rate")
scale = best["goodput_requests_per_second"] / own["arrival_rate"]
if scale < 1:
    fail("the best plan's goodput is below the workload's rate")
at = report(rate * scale)
if at["slo"]["met"] != 1:
    fail("at its goodput (%.3f x the rate) the best plan misses the SLO: "
         "attainment %s" % (scale, at["slo"]["attainment"]))
print("ok: %s with %s, goodput %.2f req/s (%.2f x the workload)" %
      (best["stage_infer"], best["scheduler"],
       best["goodput_requests_per_second"], scale))
