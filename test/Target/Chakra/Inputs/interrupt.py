"""Interrupts a trace write while it runs and checks that it left either the
whole set or nothing.

    interrupt.py OUTPUT_DIR RANKS -- COMMAND...

COMMAND writes RANKS traces to OUTPUT_DIR (which must not exist). As soon
as the staging directory appears, the process gets SIGINT. Either every
rank's file and the groups file are there and nothing else (it finished
first), or it stopped: then it must say so, exit non-zero and leave no file
behind. Prints which of the two happened.
"""
import os
import signal
import subprocess
import sys
import time

out, ranks = sys.argv[1], int(sys.argv[2])
command = sys.argv[sys.argv.index("--") + 1:]
assert not os.path.exists(out), out
proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
deadline = time.monotonic() + 60
while proc.poll() is None and time.monotonic() < deadline:
    if os.path.isdir(out) and any(e.startswith(".stage-partial-") for e in os.listdir(out)):
        proc.send_signal(signal.SIGINT)
        break
    time.sleep(0.0005)
_, err = proc.communicate()
left = sorted(os.listdir(out)) if os.path.isdir(out) else []
expected = sorted([f"workload.{r}.et" for r in range(ranks)]
                  + ["workload.json", "workload.manifest.json", ".stage-lock"])
if left == expected:
    # Finished before the signal (or was stopped after its last rename).
    print("finished before the interrupt: the whole set")
else:
    if proc.returncode == 0:
        sys.exit(f"finished, but the directory holds {len(left)} entries, not {len(expected)}")
    if b"interrupted: no trace was written" not in err:
        sys.exit(f"exit {proc.returncode} without the interrupt's message: {err.decode()}")
    if left:
        sys.exit(f"interrupted, but left {left[:5]}")
    print("interrupted: nothing left")
