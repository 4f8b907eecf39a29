#!/usr/bin/env python3
"""Predicted against measured: published training runs, each expressed in
stage with its published plan, the report's iteration beside the paper's.

    bench/validation.py [--work DIR] [--device PROFILE] [--rows NAMES]
                        [--option KEY=VALUE ...] [--json]

The published numbers are written here from the papers (never computed by
stage), with the GPT configuration and plan each states:

- Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
  Clusters Using Megatron-LM", SC'21, Table 1: GPT models of 1.7B to 1T
  parameters on 32 to 3072 A100 80GB GPUs, sequence 2048, vocabulary
  51200, activation recomputation, Megatron-LM's unfused attention and
  dropout 0.1; the table gives the achieved teraFLOP/s
  per GPU, and the time follows from the paper's FLOPs equation (3),
  96 B s l h^2 (1 + s/(6h) + V/(16 l h)), over that rate and the GPUs.
- Korthikanti et al., "Reducing Activation Recomputation in Large
  Transformer Models", MLSys'23, Table 3 (configurations) and Table 5
  (end-to-end iteration times): 22B, 175B, 530B and 1T on A100 80GB, full
  recomputation, and selective recomputation with sequence parallelism.

Megatron-LM of 2021-22 overlapped no communication with compute (the
data-parallel all-reduce ran after the backward pass, the tensor-parallel
collectives on the critical path): every row runs `overlap=none`. Where a
paper leaves a plan detail unsaid (Narayanan's micro-batch size and
schedule), the choice is stated in `unsaid` and `--option` moves it (as in
`--option micro-batch-size=2`), so that its effect can be shown.

Prints a Markdown table (or JSON) of each row: published and predicted
seconds, the ratio predicted / published, and the mean and worst absolute
error. Exit status 0 (the numbers are the result, not a pass or fail).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("STAGE_BIN_DIR") or os.path.join(
    os.environ.get("STAGE_BUILD_DIR", os.path.join(ROOT, "build")), "bin")

SEQ, VOCAB = 2048, 51200

# Narayanan et al. 2021, Table 1: parameters (billions), heads, hidden,
# layers, tensor-parallel size, pipeline-parallel size, GPUs, batch size,
# achieved teraFLOP/s per GPU.
NARAYANAN = [
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137),
    ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142),
    ("18B", 48, 6144, 40, 8, 1, 256, 1024, 135),
    ("39B", 64, 8192, 48, 8, 2, 512, 1536, 138),
    ("76B", 80, 10240, 60, 8, 4, 1024, 1792, 140),
    ("145B", 96, 12288, 80, 8, 8, 1536, 2304, 148),
    ("310B", 128, 16384, 96, 8, 16, 1920, 2160, 155),
    ("530B", 128, 20480, 105, 8, 35, 2520, 2520, 163),
    ("1T", 160, 25600, 128, 8, 64, 3072, 3072, 163),
]

# Korthikanti et al. 2022: Table 3 (heads, hidden, layers, tensor- and
# pipeline-parallel sizes, GPUs, global batch, micro-batch size) and
# Table 5 (iteration seconds with full recomputation, and with selective
# recomputation and sequence parallelism).
KORTHIKANTI = [
    ("22B", 64, 6144, 48, 8, 1, 8, 4, 4, 1.42, 1.10),
    ("175B", 96, 12288, 96, 8, 8, 64, 64, 1, 18.13, 13.75),
    ("530B", 128, 20480, 105, 8, 35, 280, 280, 1, 49.05, 37.83),
    ("1T", 160, 25600, 128, 8, 64, 512, 512, 1, 94.42, 71.49),
]


def narayanan_flops(B, l, h):
    """Equation (3) of Narayanan et al.: FLOPs of an iteration with
    activation recomputation."""
    return 96 * B * SEQ * l * h * h * (1 + SEQ / (6 * h) + VOCAB / (16 * l * h))


def rows(options):
    """Every row: name, GPT config, batch, plan options, published seconds,
    what the paper leaves unsaid."""
    out = []
    for name, heads, hidden, layers, tp, pp, gpus, batch, tflops in NARAYANAN:
        dp = gpus // (tp * pp)
        plan = {"tp": tp, "pp": pp, "dp": dp, "micro-batch-size": 1,
                "recompute": "full", "sp": "false", "overlap": "none"}
        if pp > 1:
            plan["schedule"] = "1f1b"
        plan.update(options)
        seconds = narayanan_flops(batch, layers, hidden) / (tflops * 1e12 * gpus)
        out.append((f"Narayanan {name}", heads, hidden, layers, batch, plan,
                    seconds, "micro-batch size 1, 1F1B (not stated in Table 1)"))
    for name, heads, hidden, layers, tp, pp, gpus, batch, mbs, full, selective in KORTHIKANTI:
        dp = gpus // (tp * pp)
        for kind, seconds in (("full", full), ("selective+SP", selective)):
            plan = {"tp": tp, "pp": pp, "dp": dp, "micro-batch-size": mbs,
                    "recompute": "full" if kind == "full" else "selective",
                    "sp": "false" if kind == "full" else "true",
                    "overlap": "none"}
            if pp > 1:
                plan["schedule"] = "1f1b"
            plan.update(options)
            out.append((f"Korthikanti {name} {kind}", heads, hidden, layers,
                        batch, plan, seconds, "1F1B (the schedule is not stated)"))
    return out


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)}\n{p.stderr}")
    return p.stdout


def predict(work, name, heads, hidden, layers, batch, plan, device):
    tag = name.replace(" ", "_").replace("+", "")
    config = os.path.join(work, f"{tag}.json")
    with open(config, "w") as f:
        json.dump({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
                   "activation_function": "gelu_new", "n_ctx": SEQ,
                   "n_positions": SEQ, "n_embd": hidden, "n_head": heads,
                   "n_layer": layers, "n_inner": None, "vocab_size": VOCAB,
                   "layer_norm_epsilon": 1e-5, "attn_pdrop": 0.1,
                   "resid_pdrop": 0.1, "embd_pdrop": 0.1}, f)
    model = os.path.join(work, f"{tag}.mlir")
    step = os.path.join(work, f"{tag}.step.mlir")
    # Megatron-LM's attention of the time: scores, softmax (with the scale
    # and mask fused), dropout and context, each a kernel.
    run([os.path.join(BIN, "stage-translate"), "--import-hf-config", config,
         f"--batch={batch}", f"--seq={SEQ}", "--attention=unfused", "-o", model])
    options = " ".join(f"{k}={v}" for k, v in plan.items())
    run([os.path.join(BIN, "stage-opt"), model, f"--stage-train={options}", "-o", step])
    report = json.loads(run([os.path.join(BIN, "stage-translate"), step,
                             "--stage-to-report", "--format=json", f"--device={device}"]))
    try:
        return float(report["job"]["job_time"]["iteration"]["value"])
    except KeyError:
        raise RuntimeError(f"{name}: the report has no iteration time")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work")
    ap.add_argument("--device", default="a100-80gb")
    ap.add_argument("--rows", help="comma-separated substrings of row names")
    ap.add_argument("--option", action="append", default=[],
                    help="a plan option for every row, as micro-batch-size=2")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    options = dict(o.split("=", 1) for o in args.option)
    work = args.work or tempfile.mkdtemp(prefix="stage-validation-")
    os.makedirs(work, exist_ok=True)
    results = []
    for name, heads, hidden, layers, batch, plan, published, unsaid in rows(options):
        if args.rows and not any(r in name for r in args.rows.split(",")):
            continue
        predicted = predict(work, name, heads, hidden, layers, batch, plan, args.device)
        results.append({"row": name, "published": published, "predicted": predicted,
                        "ratio": predicted / published, "plan": plan, "unsaid": unsaid})
    errors = [abs(r["ratio"] - 1) for r in results]
    summary = {"device": args.device, "rows": len(results),
               "mean_abs_error": sum(errors) / len(errors) if errors else 0,
               "worst_abs_error": max(errors) if errors else 0}
    if args.json:
        json.dump({"summary": summary, "results": results}, sys.stdout, indent=1)
        print()
        return
    print(f"| run | published | predicted ({args.device}) | predicted / published |")
    print("|---|---:|---:|---:|")
    for r in results:
        print(f"| {r['row']} | {r['published']:.3f} s | {r['predicted']:.3f} s | {r['ratio']:.3f} |")
    print(f"\nmean |error| {summary['mean_abs_error'] * 100:.1f}%, "
          f"worst {summary['worst_abs_error'] * 100:.1f}% over {summary['rows']} rows")


if __name__ == "__main__":
    main()
