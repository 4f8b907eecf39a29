"""The search's time model against ASTRA-sim (bench/explore.sh).

    explore_vs_astra_sim.py BIN_DIR SIMULATE WORK_DIR [quick]

A dozen plans on 8 to 32 GPUs (dense and MoE; dp, tp, pp, ep, ZeRO-3),
each model shallow enough to simulate in seconds: for each plan the
report's iteration (the number stage-explore ranks by), ASTRA-sim's
(analytical, congestion-unaware, one switch at the h100 profile's achieved
NVLink bandwidth, its roofline off so that it replays the traces' compute
durations, which the time model wrote), their ratio, and at the end the
Spearman rank correlation of the two orderings. `quick` runs three smaller plans
(the test of test/e2e/explore-astra-sim.test) and fails when one is more
than 15% off.
"""
import json
import os
import subprocess
import sys

bindir, simulate, work = sys.argv[1:4]
quick = sys.argv[4:] == ["quick"]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.makedirs(work, exist_ok=True)

# The cluster the report prices, given to the simulator: the h100
# profile's NVLink at its achieved fraction, its latency per hop, and an
# ASTRA-sim system that replays the traces' durations (roofline off).
profile = json.load(open(os.path.join(root, "profiles", "h100.json")))
link = profile["link_bandwidth"]["value"]
achieved_gbps = link * profile["link_efficiency"]["value"] / 1e9
latency_ns = profile["link_latency"]["value"] * 1e9
system = os.path.join(work, "system-durations.json")
json.dump({"scheduling-policy": "LIFO", "endpoint-delay": 10,
           "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4,
           "all-reduce-implementation": ["ring"],
           "all-gather-implementation": ["ring"],
           "reduce-scatter-implementation": ["ring"],
           "all-to-all-implementation": ["ring"],
           "collective-optimization": "localBWAware", "local-mem-bw": 3350,
           "boost-mode": 0, "roofline-enabled": 0}, open(system, "w"))

# name, config, layers, batch, seq, plan
PLANS = [
    ("llama dp8 zero1", "llama-3-8b", 4, 16, 2048, "dp=8 zero=1"),
    ("llama dp8 zero3", "llama-3-8b", 4, 16, 2048, "dp=8 zero=3"),
    ("llama tp8", "llama-3-8b", 4, 16, 2048, "tp=8"),
    ("llama dp4 tp2 zero1", "llama-3-8b", 4, 16, 2048,
     "dp=4 tp=2 zero=1 recompute=selective"),
    ("llama tp2 pp4 1f1b", "llama-3-8b", 8, 16, 2048,
     "tp=2 pp=4 micro-batches=8"),
    ("llama dp2 tp2 pp2 interleaved", "llama-3-8b", 8, 16, 2048,
     "dp=2 tp=2 pp=2 micro-batches=4 schedule=interleaved"),
    ("llama dp2 tp4 pp2 (16)", "llama-3-8b", 4, 16, 2048,
     "dp=2 tp=4 pp=2 micro-batches=4 zero=1"),
    ("llama dp4 tp4 pp2 (32)", "llama-3-8b", 4, 32, 2048,
     "dp=4 tp=4 pp=2 micro-batches=4 zero=1"),
    ("mixtral ep8", "mixtral-8x7b", 2, 16, 2048, "ep=8 zero=1"),
    ("mixtral ep4 tp2", "mixtral-8x7b", 2, 16, 2048, "ep=4 tp=2 zero=1"),
    ("mixtral ep2 pp4 zb-h1", "mixtral-8x7b", 8, 16, 2048,
     "ep=2 pp=4 micro-batches=8 schedule=zb-h1"),
    ("mixtral dp2 ep8 zero3 (16)", "mixtral-8x7b", 2, 16, 2048,
     "dp=2 ep=8 zero=3"),
    ("mixtral ep8 tp2 pp2 (32)", "mixtral-8x7b", 4, 32, 2048,
     "ep=8 tp=2 pp=2 micro-batches=2 zero=1"),
]


if quick:
    PLANS = [
        ("llama dp4 zero3", "llama-3-8b", 2, 8, 1024, "dp=4 zero=3"),
        ("llama tp2 pp2 1f1b", "llama-3-8b", 4, 8, 1024,
         "tp=2 pp=2 micro-batches=4"),
        ("mixtral ep4", "mixtral-8x7b", 2, 8, 1024, "ep=4 zero=1"),
    ]


def run(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r.stdout


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0] * len(values)
    for pos, i in enumerate(order):
        r[i] = pos
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    d2 = sum((x - y) ** 2 for x, y in zip(ra, rb))
    return 1 - 6 * d2 / (n * (n * n - 1))


print(f"{'plan':34} {'GPUs':>4} {'report':>10} {'ASTRA-sim':>10} {'ratio':>6}")
reported, simulated = [], []
for name, config, layers, batch, seq, plan in PLANS:
    stem = name.split(" (")[0].replace(" ", "-")
    c = json.load(open(os.path.join(root, "examples", "hf", config + ".json")))
    c["num_hidden_layers"] = layers
    cfg = os.path.join(work, stem + ".json")
    json.dump(c, open(cfg, "w"))
    model = os.path.join(work, stem + ".model.mlir")
    run(os.path.join(bindir, "stage-translate"), "--import-hf-config", cfg,
        f"--batch={batch}", f"--seq={seq}", "-o", model)
    step = os.path.join(work, stem + ".mlir")
    run(os.path.join(bindir, "stage-opt"), model, "--stage-train=" + plan,
        "-o", step)
    # ASTRA-sim's network as simulate.sh builds it: one switch (every rank
    # in one node), all-to-all as a ring.
    gpus = 1
    for axis in ("dp", "tp", "pp", "cp", "ep"):
        for word in plan.split():
            if word.startswith(axis + "="):
                gpus *= int(word.split("=")[1])
    network = os.path.join(work, f"network-{gpus}.json")
    json.dump({"gpus_per_node": gpus, "link_bandwidth": link,
               "latency": latency_ns * 1e-9, "all_to_all": "ring"},
              open(network, "w"))
    report = json.loads(run(os.path.join(bindir, "stage-translate"), step,
                            "--stage-to-report", "--format=json",
                            "--device=h100", "--network=" + network))
    traces = os.path.join(work, stem)
    run(os.path.join(bindir, "stage-translate"), step, "--stage-to-chakra",
        "--device=h100", "--output-dir=" + traces)
    out = run(simulate, traces, "--timeout=1200",
              f"--bandwidth={achieved_gbps:g}", f"--latency={latency_ns:g}",
              "--system=" + system)
    sim = int(out.split("max: ")[1].split(" ")[0]) * 1e-9
    rep = report["job"]["job_time"]["iteration"]["value"]
    reported.append(rep)
    simulated.append(sim)
    print(f"{name:34} {gpus:4} {rep*1e3:8.2f} ms {sim*1e3:8.2f} ms "
          f"{rep/sim:6.3f}", flush=True)
    subprocess.run(["rm", "-rf", traces])
worst = max(abs(r / s - 1) for r, s in zip(reported, simulated))
print(f"largest deviation {worst*100:.1f}%, Spearman rank correlation "
      f"{spearman(reported, simulated):.3f}")
if quick and worst > 0.15:
    sys.exit(f"a plan is {worst*100:.1f}% off ASTRA-sim, more than 15%")
