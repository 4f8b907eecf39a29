"""Writes an N-layer model in the form of examples/frontends/gpt2-block.mlir:
N copies of its decoder block in one function, each with its own weights
(`h.<i>.` before every parameter name, as transformers names GPT-2's), the
output of block i the input of block i+1.

    stack_blocks.py BLOCK.mlir N > model.mlir
"""
import re
import sys

text = open(sys.argv[1]).read()
layers = int(sys.argv[2])
header = re.search(r"func\.func @\w+\((.*?)\) -> (tensor<[^>]*>) \{\n", text, re.S)
args, result = header.group(1), header.group(2)
body = text[header.end():text.index("\n  return ")]
ret = re.search(r"\n  return (%\w+)", text).group(1)
resources = text[text.index("{-#"):] if "{-#" in text else ""

arg_lines = [a.strip() for a in args.strip().split(",\n")]
inputs = [a for a in arg_lines if "stage.input" in a]
params = [a for a in arg_lines if "stage.param" in a]


def rename(s, i):
    # Every SSA name and block argument gets the layer's suffix.
    return re.sub(r"%(\w+)", lambda m: f"%{m.group(1)}_l{i}", s)


out = []
sig = [inputs[0]]
for i in range(layers):
    for p in params:
        p = rename(p, i).replace('stage.param = "', f'stage.param = "h.{i}.')
        sig.append(p)
x_name = re.match(r"(%\w+)", inputs[0]).group(1)
out.append(f"func.func @gpt2_{layers}_layers(\n    " + ",\n    ".join(sig) + f") -> {result} {{")
previous = x_name
for i in range(layers):
    block = rename(body, i)
    block = block.replace(f"{x_name}_l{i}", previous)
    out.append(f"  // block {i}")
    out.append(block)
    previous = f"{ret}_l{i}"
out.append(f"  return {previous} : {result}\n}}\n")
sys.stdout.write("\n".join(out) + "\n" + resources)
