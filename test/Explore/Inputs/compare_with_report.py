"""Runs stage-explore, then compiles a sample of the plans it prints by hand
(stage-opt --stage-train, stage-translate --stage-to-report) and checks that
the search's peak memory and iteration time are the report's. With
--mode=infer, serving plans: each imported at its batch (HF_CONFIG, the
model's config, with the sequence SEQ), compiled with --stage-infer, and
compared by peak memory, time to first token and time per output token.

  compare_with_report.py BIN_DIR MODEL GPUS SAMPLES [stage-explore options...]
  compare_with_report.py BIN_DIR MODEL GPUS SAMPLES --hf=HF_CONFIG --seq=SEQ
      --mode=infer [stage-explore options...]
"""
import json
import os
import subprocess
import sys
import tempfile

bin_dir, model, gpus, samples = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
extra = sys.argv[5:]
hf = [a.split("=", 1)[1] for a in extra if a.startswith("--hf=")]
seq = [a.split("=", 1)[1] for a in extra if a.startswith("--seq=")]
extra = [a for a in extra if not a.startswith(("--hf=", "--seq="))]
serving = "--mode=infer" in extra


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


plans = json.loads(run(os.path.join(bin_dir, "stage-explore"), model,
                       "--gpus=" + gpus, "--format=json", "--top=100000",
                       "--quiet", *extra))
assert plans, "no plans"
# Every k-th plan from the best, so that the sample spans the ranking.
step = max(1, len(plans) // samples)
sample = plans[::step][:samples]
schedules = set()
with tempfile.TemporaryDirectory() as tmp:
    for p in sample:
        step_file = os.path.join(tmp, "step.mlir")
        if serving:
            # The model imported at the plan's batch: the search evaluated
            # it from a step compiled at another.
            source = os.path.join(tmp, "model.mlir")
            run(os.path.join(bin_dir, "stage-translate"), "--import-hf-config",
                hf[0], "--batch=" + str(p["batch"]), "--seq=" + seq[0],
                "-o", source)
            run(os.path.join(bin_dir, "stage-opt"), source, "-o", step_file,
                "--stage-infer=" + p["plan"])
        else:
            run(os.path.join(bin_dir, "stage-opt"), model, "-o", step_file,
                "--stage-train=" + p["plan"])
        # The search's device and network options, given to the report.
        device = [a for a in extra if a.startswith(("--gpus-per-node",
                                                    "--network",
                                                    "--device-memory"))]
        report = json.loads(run(os.path.join(bin_dir, "stage-translate"),
                                step_file, "--stage-to-report",
                                "--format=json", "--device=h100", *device))
        peak = max(s["memory"]["peak"]["value"] for s in report["stages"])
        if peak != p["peak_memory_bytes"]:
            sys.exit(f"{p['plan']}: search peak {p['peak_memory_bytes']}, "
                     f"report {peak}")
        if serving:
            for key in ("ttft", "tpot"):
                value = report["job"]["job_time"][key]["value"]
                if abs(value - p[key + "_seconds"]) > 1e-9 * max(1.0, value):
                    sys.exit(f"{p['plan']} at batch {p['batch']}: search "
                             f"{key} {p[key + '_seconds']}, report {value}")
            schedules.add(str(p["batch"]))
            continue
        iteration = report["job"]["job_time"]["iteration"]["value"]
        if abs(iteration - p["iteration_seconds"]) > 1e-9 * max(1.0, iteration):
            sys.exit(f"{p['plan']}: search iteration {p['iteration_seconds']}, "
                     f"report {iteration}")
        schedules.add(p["schedule"])
print(f"{len(sample)} of {len(plans)} plans agree with their reports "
      f"({'batches' if serving else 'schedules'} "
      f"{', '.join(sorted(schedules))})")
