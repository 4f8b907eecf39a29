"""Rewrites examples/frontends/gpt2-block.mlir to an interleaved layout of
the fused QKV projection, each head's q, k and v side by side, instead of
GPT-2's three contiguous blocks [q | k | v] of H*Dh each:

  neox:  the output viewed as [B, S, H, 3*Dh] and sliced along its last
         dimension (GPT-NeoX: `qkv.view(B, S, H, 3*Dh)`, `chunk(3, -1)`);
  bloom: the output viewed as [B, S, H, 3, Dh], each part a unit slice of
         the `3` (BLOOM: `fused_qkv.view(B, S, H, 3, Dh)[..., k, :]`).

    interleave_qkv.py gpt2-block.mlir neox|bloom > block.mlir
"""
import re
import sys

text = open(sys.argv[1]).read()
mode = sys.argv[2]
B, S, H, DH = 8, 128, 12, 64
old = re.compile(
    r"  %sq = tensor.extract_slice %v28.*?\n"
    r"  %sk = tensor.extract_slice %v28.*?\n"
    r"  %sv = tensor.extract_slice %v28.*?\n"
    r"  %v29 = tensor.expand_shape %sq.*?\n"
    r"  %v35 = tensor.expand_shape %sk.*?\n"
    r"  %v41 = tensor.expand_shape %sv.*?\n")
if not old.search(text):
    sys.exit("interleave_qkv.py: the block's q/k/v slices were not found")
fused = f"tensor<{B * S}x{3 * H * DH}xbf16>"
part = f"tensor<{B}x{S}x{H}x{DH}xbf16>"
if mode == "neox":
    view = f"tensor<{B}x{S}x{H}x{3 * DH}xbf16>"
    new = (f"  %qkv = tensor.expand_shape %v28 [[0, 1], [2, 3]] output_shape "
           f"[{B}, {S}, {H}, {3 * DH}] : {fused} into {view}\n")
    for name, k in (("v29", 0), ("v35", 1), ("v41", 2)):
        new += (f"  %{name} = tensor.extract_slice %qkv[0, 0, 0, {k * DH}] "
                f"[{B}, {S}, {H}, {DH}] [1, 1, 1, 1] : {view} to {part}\n")
elif mode == "bloom":
    view = f"tensor<{B}x{S}x{H}x3x{DH}xbf16>"
    unit = f"tensor<{B}x{S}x{H}x1x{DH}xbf16>"
    new = (f"  %qkv = tensor.expand_shape %v28 [[0, 1], [2, 3, 4]] "
           f"output_shape [{B}, {S}, {H}, 3, {DH}] : {fused} into {view}\n")
    for name, k in (("v29", 0), ("v35", 1), ("v41", 2)):
        new += (f"  %{name}_u = tensor.extract_slice %qkv[0, 0, 0, {k}, 0] "
                f"[{B}, {S}, {H}, 1, {DH}] [1, 1, 1, 1, 1] : {view} to {unit}\n"
                f"  %{name} = tensor.collapse_shape %{name}_u "
                f"[[0], [1], [2], [3, 4]] : {unit} into {part}\n")
else:
    sys.exit("interleave_qkv.py: the layout is neox or bloom")
sys.stdout.write(old.sub(lambda m: new, text))
