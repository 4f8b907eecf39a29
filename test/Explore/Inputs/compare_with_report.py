"""Runs stage-explore, then compiles a sample of the plans it prints by hand
(stage-opt --stage-train, stage-translate --stage-to-report) and checks that
the search's peak memory and iteration time are the report's.

  compare_with_report.py BIN_DIR MODEL GPUS SAMPLES [stage-explore options...]
"""
import json
import os
import subprocess
import sys
import tempfile

bin_dir, model, gpus, samples = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
extra = sys.argv[5:]


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
        iteration = report["job"]["job_time"]["iteration"]["value"]
        if peak != p["peak_memory_bytes"]:
            sys.exit(f"{p['plan']}: search peak {p['peak_memory_bytes']}, "
                     f"report {peak}")
        if abs(iteration - p["iteration_seconds"]) > 1e-9 * max(1.0, iteration):
            sys.exit(f"{p['plan']}: search iteration {p['iteration_seconds']}, "
                     f"report {iteration}")
        schedules.add(p["schedule"])
print(f"{len(sample)} of {len(plans)} plans agree with their reports "
      f"(schedules {', '.join(sorted(schedules))})")
