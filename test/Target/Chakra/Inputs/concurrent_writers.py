"""Two runs writing different trace sets into one directory at once.

    concurrent_writers.py WORK STEP.mlir -- STAGE_TRANSLATE

Run A is stopped (SIGSTOP) while it writes into WORK; run B, of another set
(the same step with --grad-bucket=0), writes and publishes meanwhile; then
A resumes. A must refuse to replace B's set, and WORK must hold B's set,
whole. Prints what happened; stage-trace (next to STAGE_TRANSLATE)
verifies.
"""
import json
import os
import signal
import subprocess
import sys
import time

work, step = sys.argv[1], sys.argv[2]
tool = sys.argv[sys.argv.index("--") + 1]
trace = os.path.join(os.path.dirname(tool), "stage-trace")
a = [tool, step, "--stage-to-chakra", f"--output-dir={work}", "--threads=1"]
b = a + ["--grad-bucket=0"]


def set_id(directory):
    with open(os.path.join(directory, "workload.manifest.json")) as f:
        return json.load(f)["set"]


subprocess.run(["rm", "-rf", work, work + ".b"], check=True)
proc = subprocess.Popen(a, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
deadline = time.monotonic() + 60
started = False
while proc.poll() is None and time.monotonic() < deadline and not started:
    if os.path.isdir(work):
        for e in os.listdir(work):
            if e.startswith(".stage-partial-"):
                for _, _, files in os.walk(os.path.join(work, e)):
                    started |= any(f.endswith(".et") for f in files)
    time.sleep(0.001)
if not started:
    sys.exit("run A ended before it wrote a trace")
proc.send_signal(signal.SIGSTOP)
rb = subprocess.run(b, capture_output=True).returncode
proc.send_signal(signal.SIGCONT)
_, err = proc.communicate()
print(f"B: exit {rb}; A: exit {proc.returncode}")
sys.stdout.write(err.decode())
subprocess.run(b[:3] + [f"--output-dir={work}.b"] + b[4:], check=True,
               capture_output=True)
holds = "B's" if set_id(work) == set_id(work + ".b") else "another"
v = subprocess.run([trace, "verify", work], capture_output=True).returncode
left = [e for e in os.listdir(work) if e.startswith(".stage-partial-")]
print(f"the directory holds {holds} set; verify exit {v}; "
      f"staging directories left: {len(left)}")
