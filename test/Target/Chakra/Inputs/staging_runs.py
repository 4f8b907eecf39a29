"""Staging directories of runs that die or stop while they write.

    staging_runs.py WORK STEP.mlir -- STAGE_TRANSLATE

1. A run writing STEP's traces into WORK/killed... is killed by SIGKILL as
   soon as its staging directory holds a trace: the directory stays.
2. The next run into the directory removes it and publishes the set.
3. A run stopped (SIGSTOP) while it writes keeps its staging directory
   through another run's write into the same directory (its marker's lock
   says it is alive); resumed, it finishes and publishes.

Prints what each step left; stage-trace (next to STAGE_TRANSLATE) verifies.
"""
import os
import signal
import subprocess
import sys
import time

work, step = sys.argv[1], sys.argv[2]
tool = sys.argv[sys.argv.index("--") + 1]
trace = os.path.join(os.path.dirname(tool), "stage-trace")
command = [tool, step, "--stage-to-chakra", f"--output-dir={work}", "--threads=1"]


def staging():
    if not os.path.isdir(work):
        return []
    return [os.path.join(work, e) for e in os.listdir(work)
            if e.startswith(".stage-partial-")]


def wait_for_traces(proc):
    """Until the run's staging directory holds a trace (or it ends)."""
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        for d in staging():
            for sub, _, files in os.walk(d):
                if any(f.endswith(".et") for f in files):
                    return True
        time.sleep(0.001)
    return False


def verify():
    return subprocess.run([trace, "verify", work], capture_output=True).returncode


subprocess.run(["rm", "-rf", work], check=True)
proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if not wait_for_traces(proc):
    sys.exit("the run ended before its staging directory held a trace")
proc.send_signal(signal.SIGKILL)
proc.wait()
print(f"killed: its staging directory stays: {len(staging())}")

rc = subprocess.run(command, capture_output=True).returncode
print(f"next run: exit {rc}; staging directories left: {len(staging())}; "
      f"verify exit {verify()}")

proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if not wait_for_traces(proc):
    sys.exit("the run ended before its staging directory held a trace")
proc.send_signal(signal.SIGSTOP)
rc = subprocess.run(command, capture_output=True).returncode
print(f"stopped: the next run left its staging directory: {len(staging())} "
      f"(that run's exit {rc})")
proc.send_signal(signal.SIGCONT)
rc = proc.wait()
print(f"resumed: exit {rc}; staging directories left: {len(staging())}; "
      f"verify exit {verify()}")
