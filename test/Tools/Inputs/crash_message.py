"""Crashes a stage tool on purpose and prints what it says on stderr.

  crash_message.py TOOL [ARGS...]

The tool starts reading its input from a pipe that stays open (so it is
surely running), then gets SIGSEGV, as a crash inside it would raise:
LLVM's signal handler prints the stack and the bug report message.
"""
import signal
import subprocess
import sys
import time

tool = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE,
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def blocked():
    """Whether the tool waits in a read or an open (its handlers are set)."""
    try:
        with open(f"/proc/{tool.pid}/syscall") as f:
            return f.read().split()[0] in ("0", "257")  # read, openat
    except (OSError, IndexError):
        return False


# Blocked three polls in a row: not a library read while it loads.
deadline, streak = time.time() + 30, 0
while streak < 3 and time.time() < deadline:
    streak = streak + 1 if blocked() else 0
    time.sleep(0.1)
tool.send_signal(signal.SIGSEGV)
_, err = tool.communicate(timeout=60)
sys.stdout.write(err.decode(errors="replace"))
print(f"exit {tool.returncode}")
