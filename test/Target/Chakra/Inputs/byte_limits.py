"""The byte limits of --stage-to-chakra, against a trace set written
without them: the total and the largest file measured on disk are the
limits a run must just pass, and one byte less must be refused, before
anything is written (for a set this small every rank is sized first, so
the estimate is exact).

   byte_limits.py STAGE_TRANSLATE STEP.mlir WRITTEN_DIR SCRATCH_DIR
"""
import os
import subprocess
import sys

tool, step, written, scratch = sys.argv[1:5]
sizes = [os.path.getsize(os.path.join(written, f))
         for f in os.listdir(written) if f.endswith(".et")]
total, largest = sum(sizes), max(sizes)


def run(flag, value):
    out = os.path.join(scratch, f"{flag}-{value}")
    p = subprocess.run([tool, step, "--stage-to-chakra", f"--output-dir={out}",
                        f"--{flag}={value}"], capture_output=True, text=True)
    return p.returncode, p.stderr, os.path.exists(out)


for flag, limit in (("max-trace-bytes", total),
                    ("max-trace-bytes-per-rank", largest)):
    rc, err, made = run(flag, limit)
    assert rc == 0 and made, (flag, limit, err)
    rc, err, made = run(flag, limit - 1)
    assert rc != 0 and not made and f"(--{flag})" in err, (flag, limit, err)
print(f"exact limits hold: {len(sizes)} files, {total} bytes, largest {largest}")
