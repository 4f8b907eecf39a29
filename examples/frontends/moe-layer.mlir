// A top-2 mixture-of-experts layer (E = 8 experts of width 1024, capacity
// factor 1.25: C = 1.25 * 2 * S / E = 40 slots per expert and sequence) in
// the static dispatch form of GShard (Lepikhin et al. 2021), the form in
// which JAX and TensorFlow MoE models reach MLIR through StableHLO and then
// linalg on tensors: the gates pick each token's two experts (a max over
// the softmax, the second after masking the first), a token's slot in its
// expert's buffer is a cumulative count over the sequence (a matmul with a
// triangular ones matrix, as Mesh TensorFlow computes it), and dispatch and
// combine are einsums with the [B, S, E, C] one-hot masks. torch-mlir's
// form of a top-k MoE has data-dependent shapes (nonzero, index_put), which
// a static trace cannot hold. Written by hand; batch 4, sequence 128, width 512.
//
//   stage-opt moe-layer.mlir --convert-linalg-to-stage \
//     --stage-symbolize="B=4,S=128,D=512,E=8,Fe=1024,C=40" \
//     --stage-train="ep=2 dp=2"
func.func @moe_layer(
    %x: tensor<4x128x512xbf16> {stage.input = "x"},
    %gate: tensor<512x8xbf16> {stage.param = "gate.weight", stage.group = "router"},
    %w_in: tensor<8x512x1024xbf16> {stage.param = "experts.w_in", stage.group = "expert"},
    %w_out: tensor<8x1024x512xbf16> {stage.param = "experts.w_out", stage.group = "expert"}) -> tensor<4x128x512xbf16> {
  %zero = arith.constant 0.000000e+00 : bf16
  %e1 = tensor.empty() : tensor<4x128x8xbf16>
  %z2 = linalg.fill ins(%zero : bf16) outs(%e1 : tensor<4x128x8xbf16>) -> tensor<4x128x8xbf16>
  // router logits
  %v3 = linalg.generic {indexing_maps = [affine_map<(b, s, e, d) -> (b, s, d)>, affine_map<(b, s, e, d) -> (d, e)>, affine_map<(b, s, e, d) -> (b, s, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %gate : tensor<4x128x512xbf16>, tensor<512x8xbf16>) outs(%z2 : tensor<4x128x8xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %p = arith.mulf %a0, %a1 : bf16
      %s = arith.addf %out, %p : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x8xbf16>
  %e4 = tensor.empty() : tensor<4x128x8xbf16>
  %probs5 = linalg.softmax dimension(2) ins(%v3 : tensor<4x128x8xbf16>) outs(%e4 : tensor<4x128x8xbf16>) -> tensor<4x128x8xbf16>
  %e6 = tensor.empty() : tensor<4x128xbf16>
  %z7 = linalg.fill ins(%zero : bf16) outs(%e6 : tensor<4x128xbf16>) -> tensor<4x128xbf16>
  // first choice: the largest gate
  %v8 = linalg.generic {indexing_maps = [affine_map<(b, s, e) -> (b, s, e)>, affine_map<(b, s, e) -> (b, s)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%probs5 : tensor<4x128x8xbf16>) outs(%z7 : tensor<4x128xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %m = arith.maximumf %a0, %out : bf16
      linalg.yield %m : bf16
  } -> tensor<4x128xbf16>
  %e9 = tensor.empty() : tensor<4x128x8xbf16>
  %v10 = linalg.generic {indexing_maps = [affine_map<(b, s, e) -> (b, s, e)>, affine_map<(b, s, e) -> (b, s)>, affine_map<(b, s, e) -> (b, s, e)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%probs5, %v8 : tensor<4x128x8xbf16>, tensor<4x128xbf16>) outs(%e9 : tensor<4x128x8xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %one = arith.constant 1.000000e+00 : bf16
      %eq = arith.cmpf oeq, %a0, %a1 : bf16
      %nil = arith.constant 0.000000e+00 : bf16
      %s = arith.select %eq, %one, %nil : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x8xbf16>
  // second choice: the largest gate of the other experts
  %e11 = tensor.empty() : tensor<4x128x8xbf16>
  %v12 = linalg.generic {indexing_maps = [affine_map<(b, s, e) -> (b, s, e)>, affine_map<(b, s, e) -> (b, s, e)>, affine_map<(b, s, e) -> (b, s, e)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%probs5, %v10 : tensor<4x128x8xbf16>, tensor<4x128x8xbf16>) outs(%e11 : tensor<4x128x8xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %one = arith.constant 1.000000e+00 : bf16
      %keep = arith.subf %one, %a1 : bf16
      %s = arith.mulf %a0, %keep : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x8xbf16>
  %e13 = tensor.empty() : tensor<4x128xbf16>
  %z14 = linalg.fill ins(%zero : bf16) outs(%e13 : tensor<4x128xbf16>) -> tensor<4x128xbf16>
  %v15 = linalg.generic {indexing_maps = [affine_map<(b, s, e) -> (b, s, e)>, affine_map<(b, s, e) -> (b, s)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%v12 : tensor<4x128x8xbf16>) outs(%z14 : tensor<4x128xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %m = arith.maximumf %a0, %out : bf16
      linalg.yield %m : bf16
  } -> tensor<4x128xbf16>
  %e16 = tensor.empty() : tensor<4x128x8xbf16>
  %v17 = linalg.generic {indexing_maps = [affine_map<(b, s, e) -> (b, s, e)>, affine_map<(b, s, e) -> (b, s)>, affine_map<(b, s, e) -> (b, s, e)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v12, %v15 : tensor<4x128x8xbf16>, tensor<4x128xbf16>) outs(%e16 : tensor<4x128x8xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %one = arith.constant 1.000000e+00 : bf16
      %eq = arith.cmpf oeq, %a0, %a1 : bf16
      %nil = arith.constant 0.000000e+00 : bf16
      %s = arith.select %eq, %one, %nil : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x8xbf16>
  // the upper triangular ones matrix: pos[t] = sum over s <= t
  %tri = arith.constant dense_resource<upper_triangular_ones> : tensor<128x128xbf16>
  %e18 = tensor.empty() : tensor<4x128x8xbf16>
  %z19 = linalg.fill ins(%zero : bf16) outs(%e18 : tensor<4x128x8xbf16>) -> tensor<4x128x8xbf16>
  // slot of each first choice: tokens before it that chose the same expert
  %v20 = linalg.generic {indexing_maps = [affine_map<(b, t, e, s) -> (b, s, e)>, affine_map<(b, t, e, s) -> (s, t)>, affine_map<(b, t, e, s) -> (b, t, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%v10, %tri : tensor<4x128x8xbf16>, tensor<128x128xbf16>) outs(%z19 : tensor<4x128x8xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %p = arith.mulf %a0, %a1 : bf16
      %s = arith.addf %out, %p : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x8xbf16>
  %e21 = tensor.empty() : tensor<4x8xbf16>
  %z22 = linalg.fill ins(%zero : bf16) outs(%e21 : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  // first choices per expert
  %v23 = linalg.generic {indexing_maps = [affine_map<(b, s, e) -> (b, s, e)>, affine_map<(b, s, e) -> (b, e)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%v10 : tensor<4x128x8xbf16>) outs(%z22 : tensor<4x8xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %s = arith.addf %a0, %out : bf16
      linalg.yield %s : bf16
  } -> tensor<4x8xbf16>
  %e24 = tensor.empty() : tensor<4x128x8xbf16>
  %z25 = linalg.fill ins(%zero : bf16) outs(%e24 : tensor<4x128x8xbf16>) -> tensor<4x128x8xbf16>
  // second choices queue behind all first choices
  %v26 = linalg.generic {indexing_maps = [affine_map<(b, t, e, s) -> (b, s, e)>, affine_map<(b, t, e, s) -> (s, t)>, affine_map<(b, t, e, s) -> (b, t, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%v17, %tri : tensor<4x128x8xbf16>, tensor<128x128xbf16>) outs(%z25 : tensor<4x128x8xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %p = arith.mulf %a0, %a1 : bf16
      %s = arith.addf %out, %p : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x8xbf16>
  %e27 = tensor.empty() : tensor<4x128x8xbf16>
  %v28 = linalg.generic {indexing_maps = [affine_map<(b, s, e) -> (b, s, e)>, affine_map<(b, s, e) -> (b, e)>, affine_map<(b, s, e) -> (b, s, e)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v26, %v23 : tensor<4x128x8xbf16>, tensor<4x8xbf16>) outs(%e27 : tensor<4x128x8xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.addf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x8xbf16>
  // slot numbers 0 .. C-1
  %slots = arith.constant dense_resource<slot_numbers> : tensor<40xbf16>
  // one-hot [B, S, E, C] of each choice's slot (beyond capacity: dropped)
  %e29 = tensor.empty() : tensor<4x128x8x40xbf16>
  %v30 = linalg.generic {indexing_maps = [affine_map<(b, s, e, c) -> (b, s, e)>, affine_map<(b, s, e, c) -> (b, s, e)>, affine_map<(b, s, e, c) -> (c)>, affine_map<(b, s, e, c) -> (b, s, e, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v20, %v10, %slots : tensor<4x128x8xbf16>, tensor<4x128x8xbf16>, tensor<40xbf16>) outs(%e29 : tensor<4x128x8x40xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %a2: bf16, %out: bf16):
      %one = arith.constant 1.000000e+00 : bf16
      %p = arith.subf %a0, %one : bf16
      %eq = arith.cmpf oeq, %p, %a2 : bf16
      %nil = arith.constant 0.000000e+00 : bf16
      %s = arith.select %eq, %a1, %nil : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x8x40xbf16>
  %e31 = tensor.empty() : tensor<4x128x8x40xbf16>
  %v32 = linalg.generic {indexing_maps = [affine_map<(b, s, e, c) -> (b, s, e)>, affine_map<(b, s, e, c) -> (b, s, e)>, affine_map<(b, s, e, c) -> (c)>, affine_map<(b, s, e, c) -> (b, s, e, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v28, %v17, %slots : tensor<4x128x8xbf16>, tensor<4x128x8xbf16>, tensor<40xbf16>) outs(%e31 : tensor<4x128x8x40xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %a2: bf16, %out: bf16):
      %one = arith.constant 1.000000e+00 : bf16
      %p = arith.subf %a0, %one : bf16
      %eq = arith.cmpf oeq, %p, %a2 : bf16
      %nil = arith.constant 0.000000e+00 : bf16
      %s = arith.select %eq, %a1, %nil : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x8x40xbf16>
  // combine weights: each choice's gate at its slot
  %e33 = tensor.empty() : tensor<4x128x8x40xbf16>
  %v34 = linalg.generic {indexing_maps = [affine_map<(b, s, e, c) -> (b, s)>, affine_map<(b, s, e, c) -> (b, s, e, c)>, affine_map<(b, s, e, c) -> (b, s)>, affine_map<(b, s, e, c) -> (b, s, e, c)>, affine_map<(b, s, e, c) -> (b, s, e, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v8, %v30, %v15, %v32 : tensor<4x128xbf16>, tensor<4x128x8x40xbf16>, tensor<4x128xbf16>, tensor<4x128x8x40xbf16>) outs(%e33 : tensor<4x128x8x40xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %a2: bf16, %a3: bf16, %out: bf16):
      %w1 = arith.mulf %a0, %a1 : bf16
      %w2 = arith.mulf %a2, %a3 : bf16
      %s = arith.addf %w1, %w2 : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x8x40xbf16>
  // dispatch mask
  %e35 = tensor.empty() : tensor<4x128x8x40xbf16>
  %v36 = linalg.generic {indexing_maps = [affine_map<(b, s, e, c) -> (b, s, e, c)>, affine_map<(b, s, e, c) -> (b, s, e, c)>, affine_map<(b, s, e, c) -> (b, s, e, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v30, %v32 : tensor<4x128x8x40xbf16>, tensor<4x128x8x40xbf16>) outs(%e35 : tensor<4x128x8x40xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.addf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x8x40xbf16>
  %e37 = tensor.empty() : tensor<8x4x40x512xbf16>
  %z38 = linalg.fill ins(%zero : bf16) outs(%e37 : tensor<8x4x40x512xbf16>) -> tensor<8x4x40x512xbf16>
  // dispatch: each expert's buffer of C tokens per sequence
  %v39 = linalg.generic {indexing_maps = [affine_map<(e, b, c, d, s) -> (b, s, e, c)>, affine_map<(e, b, c, d, s) -> (b, s, d)>, affine_map<(e, b, c, d, s) -> (e, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%v36, %x : tensor<4x128x8x40xbf16>, tensor<4x128x512xbf16>) outs(%z38 : tensor<8x4x40x512xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %p = arith.mulf %a0, %a1 : bf16
      %s = arith.addf %out, %p : bf16
      linalg.yield %s : bf16
  } -> tensor<8x4x40x512xbf16>
  %e40 = tensor.empty() : tensor<8x4x40x1024xbf16>
  %z41 = linalg.fill ins(%zero : bf16) outs(%e40 : tensor<8x4x40x1024xbf16>) -> tensor<8x4x40x1024xbf16>
  // experts: up projection
  %v42 = linalg.generic {indexing_maps = [affine_map<(e, b, c, f, d) -> (e, b, c, d)>, affine_map<(e, b, c, f, d) -> (e, d, f)>, affine_map<(e, b, c, f, d) -> (e, b, c, f)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%v39, %w_in : tensor<8x4x40x512xbf16>, tensor<8x512x1024xbf16>) outs(%z41 : tensor<8x4x40x1024xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %p = arith.mulf %a0, %a1 : bf16
      %s = arith.addf %out, %p : bf16
      linalg.yield %s : bf16
  } -> tensor<8x4x40x1024xbf16>
  // GELU (erf form)
  %e43 = tensor.empty() : tensor<8x4x40x1024xbf16>
  %v44 = linalg.generic {indexing_maps = [affine_map<(e, b, c, f) -> (e, b, c, f)>, affine_map<(e, b, c, f) -> (e, b, c, f)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v42 : tensor<8x4x40x1024xbf16>) outs(%e43 : tensor<8x4x40x1024xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %half = arith.constant 5.000000e-01 : bf16
      %one = arith.constant 1.000000e+00 : bf16
      %rs2 = arith.constant 7.070310e-01 : bf16
      %u = arith.mulf %a0, %rs2 : bf16
      %er = math.erf %u : bf16
      %p = arith.addf %er, %one : bf16
      %hx = arith.mulf %a0, %half : bf16
      %s = arith.mulf %hx, %p : bf16
      linalg.yield %s : bf16
  } -> tensor<8x4x40x1024xbf16>
  %e45 = tensor.empty() : tensor<8x4x40x512xbf16>
  %z46 = linalg.fill ins(%zero : bf16) outs(%e45 : tensor<8x4x40x512xbf16>) -> tensor<8x4x40x512xbf16>
  // experts: down projection
  %v47 = linalg.generic {indexing_maps = [affine_map<(e, b, c, d, f) -> (e, b, c, f)>, affine_map<(e, b, c, d, f) -> (e, f, d)>, affine_map<(e, b, c, d, f) -> (e, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%v44, %w_out : tensor<8x4x40x1024xbf16>, tensor<8x1024x512xbf16>) outs(%z46 : tensor<8x4x40x512xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %p = arith.mulf %a0, %a1 : bf16
      %s = arith.addf %out, %p : bf16
      linalg.yield %s : bf16
  } -> tensor<8x4x40x512xbf16>
  %e48 = tensor.empty() : tensor<4x128x512xbf16>
  %z49 = linalg.fill ins(%zero : bf16) outs(%e48 : tensor<4x128x512xbf16>) -> tensor<4x128x512xbf16>
  // combine: each token's outputs weighted by its gates
  %v50 = linalg.generic {indexing_maps = [affine_map<(b, s, d, e, c) -> (b, s, e, c)>, affine_map<(b, s, d, e, c) -> (e, b, c, d)>, affine_map<(b, s, d, e, c) -> (b, s, d)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%v34, %v47 : tensor<4x128x8x40xbf16>, tensor<8x4x40x512xbf16>) outs(%z49 : tensor<4x128x512xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %p = arith.mulf %a0, %a1 : bf16
      %s = arith.addf %out, %p : bf16
      linalg.yield %s : bf16
  } -> tensor<4x128x512xbf16>
  return %v50 : tensor<4x128x512xbf16>
}
