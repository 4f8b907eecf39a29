"""Prints the communication skeleton of stage IR read from stdin.

One line per collective (op, axes, dimensions, local types) and per landmark
op (regions, repeats, attention, embedding, ...), with SSA names removed, so
that a test can state the exact sequence of collectives of a program with
CHECK-NEXT.
"""
import re
import signal
import sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)

COLLECTIVES = ("all_gather", "all_reduce", "reduce_scatter", "all_to_all",
               "local_split", "send", "recv")
LANDMARKS = ("embedding", "embedding_grad", "cross_entropy", "attention",
             "attention_grad", "dispatch", "dispatch_grad", "combine",
             "combine_grad", "pipeline", "pipeline_stage", "optimizer_step")

op_re = re.compile(r"stage\.(\w+)")
ssa_re = re.compile(r"%[\w#]+(:\d+)?")

for line in sys.stdin:
    text = line.strip()
    if text.startswith("} backward {"):
        print("backward")
        continue
    m = op_re.search(text)
    if not m:
        continue
    op = m.group(1)
    rest = text[m.start():]
    if op in COLLECTIVES:
        print(ssa_re.sub("%", rest))
    elif op == "repeat":
        words = rest.split()
        print(" ".join(words[:3] if words[1] == "reverse" else words[:2]))
    elif op == "microbatches":
        print(" ".join(rest.split()[:2]))
    elif op in LANDMARKS:
        if op == "optimizer_step":
            print("optimizer_step")
        elif op in ("pipeline_stage", "pipeline"):
            print(ssa_re.sub("%", rest.split(" {")[0].split(" (")[0]))
        else:
            print(op)
