"""Checks a request-stream report (--requests) against its workload.

usage: request_stream_check.py workload OUT.jsonl --count N --rate R --seed S
       request_stream_check.py stream REPORT.json WORKLOAD.jsonl CONFIG.json --tp T
       request_stream_check.py steady STREAM.json STATIC.json

`workload` draws a Poisson stream with Python's own generator (arrival
gaps exponential at R/s, prompts uniform in 128..2048, outputs uniform in
16..512) and writes it as JSON lines.

`stream` checks the report against the workload and the HF config, never
against stage's code: every request and token counted once; percentiles
ordered; Little's law (the scheduler's time-averaged queue against the
arrival rate times the mean latency, within 5%); the KV cache per cached
position, 2 * L * max(KV/tp, 1) * Dh * 2 bytes (keys and values, bf16),
and a capacity that fits the device less the weights.

`steady` checks that a stream's mixed iterations 1..4 (one decode and a
512-token chunk, prefix 0..1536) take on average the static chunked
program's time per output token (B=1, C=512, J=4, T=514: the decode
contexts 513..516 average 514.5, so within 1e-4).
"""
import argparse
import json
import random
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def workload(args):
    rng = random.Random(args.seed)
    t = 0.0
    with open(args.out, "w") as f:
        for i in range(args.count):
            if i:
                t += rng.expovariate(args.rate)
            f.write(json.dumps({"arrival": round(t, 6),
                                "prompt_tokens": rng.randint(128, 2048),
                                "output_tokens": rng.randint(16, 512)}) + "\n")


def stream(args):
    r = json.load(open(args.report))["requests"]
    reqs = [json.loads(l) for l in open(args.workload) if l.strip()]
    cfg = json.load(open(args.config))
    if r["requests"] != len(reqs):
        fail("requests %d, the workload has %d" % (r["requests"], len(reqs)))
    for key, field in (("prompt_tokens", "prompt_tokens"),
                       ("output_tokens", "output_tokens")):
        want = sum(q[field] for q in reqs)
        if r[key] != want:
            fail("%s %d, the workload has %d" % (key, r[key], want))
    for lat in ("ttft_seconds", "tpot_seconds", "e2e_seconds"):
        s = r[lat]
        if not (0 < s["p50"] <= s["p90"] <= s["p99"] <= s["max"]):
            fail("%s percentiles out of order: %s" % (lat, s))
    if not r["ttft_seconds"]["p50"] < r["e2e_seconds"]["p50"]:
        fail("the first token comes after the last")
    little = r["littles_law_requests"]
    mean_in = r["mean_requests_in_system"]
    if abs(mean_in - little) > 0.05 * little:
        fail("Little's law: %g requests in the system on average, arrival "
             "rate x latency %g" % (mean_in, little))
    span = reqs[-1]["arrival"] - reqs[0]["arrival"]
    duration = r["duration_seconds"]
    # Little's law from the workload and the latencies alone.
    implied = len(reqs) * r["e2e_seconds"]["mean"] / duration
    if abs(implied - little) > 1e-3 * little:
        fail("arrival rate x latency %g, the report says %g" % (implied, little))
    rate = (len(reqs) - 1) / span
    if abs(r["arrival_rate"] - rate) > 1e-3 * rate:
        fail("arrival rate %g, the workload's %g" % (r["arrival_rate"], rate))
    if abs(r["throughput_tokens_per_second"] -
           r["output_tokens"] / duration) > 1e-3 * r["throughput_tokens_per_second"]:
        fail("throughput is not the output tokens over the duration")
    heads = max(cfg["num_key_value_heads"] // args.tp, 1)
    dh = cfg["hidden_size"] // cfg["num_attention_heads"]
    per = 2 * cfg["num_hidden_layers"] * heads * dh * 2
    kv = r["kv_cache"]
    if kv["bytes_per_token"] != per:
        fail("KV bytes per position %s, the config gives %d" %
             (kv["bytes_per_token"], per))
    if not 0 < kv["peak_occupancy"] <= 1:
        fail("peak occupancy %s" % kv["peak_occupancy"])
    if "slo" in r:
        s = r["slo"]
        good = s["attainment"] * len(reqs)
        if abs(s["goodput_requests_per_second"] - good / duration) > 1e-3:
            fail("goodput is not the requests meeting the SLO over the duration")
    print("ok: %d requests, Little's law %.3f vs %.3f" % (len(reqs), mean_in, little))


def steady(args):
    its = json.load(open(args.stream))["requests"]["iterations"]
    static = json.load(open(args.static))["job"]["job_time"]["tpot"]["value"]
    mixed = its[1:5]
    for it in mixed:
        if it["decodes"] != 1 or it["prompt_tokens"] != 512:
            fail("iteration %d is not one decode and a 512-token chunk: %s" %
                 (it["index"], it))
    mean = sum(it["seconds"] for it in mixed) / 4
    if abs(mean - static) > 1e-4 * static:
        fail("mixed iterations take %.9g s on average, the static program %.9g"
             % (mean, static))
    print("ok: %.9g vs %.9g" % (mean, static))


p = argparse.ArgumentParser()
sub = p.add_subparsers(dest="cmd", required=True)
w = sub.add_parser("workload")
w.add_argument("out")
w.add_argument("--count", type=int, required=True)
w.add_argument("--rate", type=float, required=True)
w.add_argument("--seed", type=int, default=1)
s = sub.add_parser("stream")
s.add_argument("report")
s.add_argument("workload")
s.add_argument("config")
s.add_argument("--tp", type=int, required=True)
t = sub.add_parser("steady")
t.add_argument("stream")
t.add_argument("static")
a = p.parse_args()
{"workload": workload, "stream": stream, "steady": steady}[a.cmd](a)
