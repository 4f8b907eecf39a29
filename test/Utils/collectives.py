"""Prints the communication of one rank's trace (the JSON lines of
`stage-translate --stage-to-chakra --rank=R`), one node per line, without
node ids: what two traces must share to issue the same collectives and
messages. With --sort-iteration, the gradient reductions (`grad:` nodes,
issued during the backward pass as the gradients appear) and the rest of
the iteration's communication (`opt:` nodes) are listed last and sorted,
since their order follows the order in which a model declares its
weights. A collective's comm_tag (its place in its group's sequence) is
left out: it restates the order."""
import json
import sys

KEYS = ("comm_type", "comm_size", "pg_name", "comm_src", "comm_dst", "comm_tag")

sort_step = "--sort-iteration" in sys.argv[1:]
lines, step = [], []
for line in sys.stdin:
    node = json.loads(line)
    if "COMM" not in node.get("type", ""):
        continue
    attrs = {a["name"]: next(v for k, v in a.items() if k != "name")
             for a in node.get("attr", [])}
    phase = node["name"].split(":")[0]
    keys = [k for k in KEYS
            if k in attrs and not (k == "comm_tag" and "COLL" in node["type"])]
    fields = [phase, node["type"]] + [f"{k}={attrs[k]}" for k in keys]
    (step if sort_step and phase in ("grad", "opt") else lines).append(" ".join(fields))
print("\n".join(lines + sorted(step)))
