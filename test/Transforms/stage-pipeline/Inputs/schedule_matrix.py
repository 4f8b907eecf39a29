"""Every schedule x pp x micro-batch count of the pipeline issue, with tensor
and data parallelism on, through stage-train, emission and the verifier.

    schedule_matrix.py STAGE_TRANSLATE STAGE_OPT STAGE_TRACE CONFIG WORKDIR

pp in {2, 3, 4, 8}, M in {1, pp - 1, pp, 2 pp + 1} where the schedule allows
it (the interleaved one, with 2 chunks per rank, needs M a multiple of pp;
the zero-bubble ones also run 4 pp, ZB-V's steady state; DualPipeV needs
M >= 2 pp and runs 2 pp, 2 pp + 1 and 4 pp; DualPipe needs an even pp and
an even M >= 2 pp and runs 2 pp, 2 pp + 2 and 4 pp);
dp = tp = 2 and one sample per micro-batch and replica. Prints one line per
combination and fails on the first trace set the verifier rejects.
"""
import os
import subprocess
import sys

translate, opt, trace, config, work = sys.argv[1:6]
os.makedirs(work, exist_ok=True)


def run(*args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{r.stderr}")
    return r.stdout


for schedule in ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-v",
                 "dualpipe-v", "dualpipe"):
    for pp in (2, 3, 4, 8):
        if schedule == "dualpipe" and pp % 2:
            continue
        counts = sorted({1, pp - 1, pp, 2 * pp + 1})
        if schedule == "interleaved":
            counts = [m for m in counts if m % pp == 0]
        if schedule.startswith("zb"):
            counts.append(4 * pp)
        if schedule == "dualpipe-v":
            counts = [2 * pp, 2 * pp + 1, 4 * pp]
        if schedule == "dualpipe":
            counts = [2 * pp, 2 * pp + 2, 4 * pp]
        for m in counts:
            name = f"{schedule}-pp{pp}-m{m}"
            model = os.path.join(work, name + ".mlir")
            step = os.path.join(work, name + ".step.mlir")
            traces = os.path.join(work, name)
            run(translate, "--import-hf-config", config, f"--batch={2 * m}",
                "--seq=64", "-o", model)
            plan = f"pp={pp} dp=2 tp=2 micro-batches={m} schedule={schedule}"
            run(opt, model, f"--stage-train={plan}", "-o", step)
            run(translate, step, "--stage-to-chakra", f"--output-dir={traces}")
            out = run(trace, "verify", traces)
            print(f"{schedule} pp={pp} M={m}: {out.split(':')[0]}")
