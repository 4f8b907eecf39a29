"""Every plan of examples/plans through ASTRA-sim, on a shallower model.

    simulate_examples.py BIN_DIR EXAMPLES_DIR SIMULATE WORK_DIR

Each plan file's model, import flags and train= or infer= plan are used as
they are, except that the model keeps only as many layers as the plan needs
(two per pipeline chunk, at least four, whole periods of a hybrid) and a
serving plan decodes 4 tokens, so that the whole set simulates in seconds
(the full examples take up to five minutes each: bench/README.md). The
simulator runs on the cluster the traces were priced for, the ASTRA-sim
configuration stage writes next to them (roofline off: the traces'
durations replayed; the h100 profile's achieved bandwidths). Prints
"NAME: finished: K/N" per plan, ASTRA-sim's count of ranks that finished,
then each training plan's simulated iteration over the report's.
"""
import json
import os
import re
import subprocess
import sys

bindir, examples, simulate, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)


def run(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r.stdout


def plan_of(path):
    keys = {}
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        k, v = line.split("=", 1)
        keys[k] = v[1:-1] if v.startswith('"') and v.endswith('"') else v
    return keys


def degree(plan, axis):
    m = re.search(rf"\b{axis}=(\d+)", plan)
    return int(m.group(1)) if m else 1


plans = os.path.join(examples, "plans")
ratios = []
for name in sorted(os.listdir(plans)):
    keys = plan_of(os.path.join(plans, name))
    stem = name[:-len(".plan")]
    root = os.path.dirname(os.path.abspath(examples))
    config = json.load(open(os.path.join(root, keys["config"])))
    plan = keys.get("train") or keys["infer"]
    chunks = degree(plan, "pp") * degree(plan, "virtual-stages")
    period = max(config.get("attn_layer_period", 1),
                 config.get("expert_layer_period", 1))
    want = max(4, 2 * chunks, period * chunks)
    for key in ("num_hidden_layers", "n_layer"):
        if key in config:
            config[key] = min(config[key], want)
    shallow = os.path.join(work, stem + ".json")
    json.dump(config, open(shallow, "w"))
    model = os.path.join(work, stem + ".mlir")
    step = os.path.join(work, stem + ".step.mlir")
    traces = os.path.join(work, stem)
    run(os.path.join(bindir, "stage-translate"), "--import-hf-config", shallow,
        f"--batch={keys['batch']}", f"--seq={keys['seq']}",
        *keys.get("import", "").split(), "-o", model)
    if "train" in keys:
        run(os.path.join(bindir, "stage-opt"), model, "-o", step,
            "--stage-train=" + keys["train"])
        bind = []
    else:
        run(os.path.join(bindir, "stage-opt"), model, "-o", step,
            "--stage-infer=" + keys["infer"])
        bind = ["--bind=N=4"]
    run(os.path.join(bindir, "stage-translate"), step, "--stage-to-chakra",
        "--device=h100", "--output-dir=" + traces, *bind)
    out = run(simulate, traces,
              "--network=" + os.path.join(traces, "workload.astra-network.yml"),
              "--system=" + os.path.join(traces, "workload.astra-system.json"))
    finished = re.search(r"finished: \d+/\d+", out)
    print(f"{stem}: {finished.group(0) if finished else 'no finished line'}")
    if "train" in keys:
        report = json.loads(run(os.path.join(bindir, "stage-translate"), step,
                                "--stage-to-report", "--format=json",
                                "--device=h100"))
        predicted = report["job"]["job_time"]["iteration"]["value"]
        simulated = int(re.search(r"max: (\d+) ns", out).group(1)) * 1e-9
        ratios.append((stem, simulated / predicted))
for stem, ratio in ratios:
    print(f"{stem}: ASTRA-sim / report {ratio:.3f}")
worst = max(abs(r - 1) for _, r in ratios)
within = sum(abs(r - 1) <= 0.10 for _, r in ratios)
print(f"within 10% of the report: {within} of {len(ratios)}; every one within "
      f"25%: {worst <= 0.25}")
