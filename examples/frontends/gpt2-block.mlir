// One GPT-2 (124M) decoder block in the linalg-on-tensors form torch-mlir's
// backend produces for transformers' GPT2Block (bfloat16, batch 8, sequence
// 128, eval-mode dropout): layer norm decomposed into reductions and
// elementwise generics, Conv1D as matmul plus bias, attention as
// batch_matmul with a causal mask and linalg.softmax, the fused c_attn
// projection split into q, k and v by slices (as aten.split lowers). Written
// by hand in that form (torch-mlir is not a Debian package), with the Conv1D
// weights as function arguments.
//
// Arguments: `stage.param` names a weight, `stage.dims` names the dimensions
// stage-symbolize cannot tell apart (768 is both D and H*Dh in GPT-2, so
// c_attn's 2304 is "3*H*Dh").
//
//   stage-opt gpt2-block.mlir --convert-linalg-to-stage \
//     --stage-symbolize="B=8,S=128,D=768,H=12,Dh=64,F=3072" \
//     --stage-train="tp=2 dp=2"
func.func @gpt2_block(
    %x: tensor<8x128x768xbf16> {stage.input = "x", stage.dims = ["B", "S", "D"]},
    %ln_1_weight: tensor<768xbf16> {stage.param = "ln_1.weight"},
    %ln_1_bias: tensor<768xbf16> {stage.param = "ln_1.bias"},
    %attn_c_attn_weight: tensor<768x2304xbf16> {stage.param = "attn.c_attn.weight", stage.dims = ["D", "3*H*Dh"]},
    %attn_c_attn_bias: tensor<2304xbf16> {stage.param = "attn.c_attn.bias", stage.dims = ["3*H*Dh"]},
    %attn_c_proj_weight: tensor<768x768xbf16> {stage.param = "attn.c_proj.weight", stage.dims = ["H*Dh", "D"]},
    %attn_c_proj_bias: tensor<768xbf16> {stage.param = "attn.c_proj.bias", stage.dims = ["D"]},
    %ln_2_weight: tensor<768xbf16> {stage.param = "ln_2.weight"},
    %ln_2_bias: tensor<768xbf16> {stage.param = "ln_2.bias"},
    %mlp_c_fc_weight: tensor<768x3072xbf16> {stage.param = "mlp.c_fc.weight"},
    %mlp_c_fc_bias: tensor<3072xbf16> {stage.param = "mlp.c_fc.bias"},
    %mlp_c_proj_weight: tensor<3072x768xbf16> {stage.param = "mlp.c_proj.weight"},
    %mlp_c_proj_bias: tensor<768xbf16> {stage.param = "mlp.c_proj.bias"}) -> tensor<8x128x768xbf16> {
  %cst0 = arith.constant 0.000000e+00 : bf16
  // ln_1: torch-mlir's decomposition of aten.native_layer_norm
  %e1 = tensor.empty() : tensor<8x128xbf16>
  %z2 = linalg.fill ins(%cst0 : bf16) outs(%e1 : tensor<8x128xbf16>) -> tensor<8x128xbf16>
  %v3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<8x128x768xbf16>) outs(%z2 : tensor<8x128xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %s = arith.addf %a0, %out : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128xbf16>
  %v4 = tensor.expand_shape %v3 [[0], [1, 2]] output_shape [8, 128, 1] : tensor<8x128xbf16> into tensor<8x128x1xbf16>
  %e5 = tensor.empty() : tensor<8x128x1xbf16>
  %v6 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v4 : tensor<8x128x1xbf16>) outs(%e5 : tensor<8x128x1xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %n = arith.constant 7.680000e+02 : bf16
      %m = arith.divf %a0, %n : bf16
      linalg.yield %m : bf16
  } -> tensor<8x128x1xbf16>
  %e7 = tensor.empty() : tensor<8x128x768xbf16>
  %v8 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %v6 : tensor<8x128x768xbf16>, tensor<8x128x1xbf16>) outs(%e7 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.subf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  %e9 = tensor.empty() : tensor<8x128x768xbf16>
  %v10 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v8 : tensor<8x128x768xbf16>) outs(%e9 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %s = arith.mulf %a0, %a0 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  %e11 = tensor.empty() : tensor<8x128xbf16>
  %z12 = linalg.fill ins(%cst0 : bf16) outs(%e11 : tensor<8x128xbf16>) -> tensor<8x128xbf16>
  %v13 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%v10 : tensor<8x128x768xbf16>) outs(%z12 : tensor<8x128xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %s = arith.addf %a0, %out : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128xbf16>
  %v14 = tensor.expand_shape %v13 [[0], [1, 2]] output_shape [8, 128, 1] : tensor<8x128xbf16> into tensor<8x128x1xbf16>
  %e15 = tensor.empty() : tensor<8x128x1xbf16>
  %v16 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v14 : tensor<8x128x1xbf16>) outs(%e15 : tensor<8x128x1xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %n = arith.constant 7.680000e+02 : bf16
      %eps = arith.constant 9.999999e-06 : bf16
      %v = arith.divf %a0, %n : bf16
      %ve = arith.addf %v, %eps : bf16
      %r = math.rsqrt %ve : bf16
      linalg.yield %r : bf16
  } -> tensor<8x128x1xbf16>
  %e17 = tensor.empty() : tensor<8x128x768xbf16>
  %v18 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v8, %v16 : tensor<8x128x768xbf16>, tensor<8x128x1xbf16>) outs(%e17 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.mulf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  %e19 = tensor.empty() : tensor<8x128x768xbf16>
  %v20 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v18, %ln_1_weight : tensor<8x128x768xbf16>, tensor<768xbf16>) outs(%e19 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.mulf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  %e21 = tensor.empty() : tensor<8x128x768xbf16>
  %v22 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v20, %ln_1_bias : tensor<8x128x768xbf16>, tensor<768xbf16>) outs(%e21 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.addf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  %v23 = tensor.collapse_shape %v22 [[0, 1], [2]] : tensor<8x128x768xbf16> into tensor<1024x768xbf16>
  %e24 = tensor.empty() : tensor<1024x2304xbf16>
  %z25 = linalg.fill ins(%cst0 : bf16) outs(%e24 : tensor<1024x2304xbf16>) -> tensor<1024x2304xbf16>
  // c_attn (Conv1D: addmm), then split into q, k, v
  %v26 = linalg.matmul ins(%v23, %attn_c_attn_weight : tensor<1024x768xbf16>, tensor<768x2304xbf16>) outs(%z25 : tensor<1024x2304xbf16>) -> tensor<1024x2304xbf16>
  %e27 = tensor.empty() : tensor<1024x2304xbf16>
  %v28 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%v26, %attn_c_attn_bias : tensor<1024x2304xbf16>, tensor<2304xbf16>) outs(%e27 : tensor<1024x2304xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.addf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<1024x2304xbf16>
  %sq = tensor.extract_slice %v28[0, 0] [1024, 768] [1, 1] : tensor<1024x2304xbf16> to tensor<1024x768xbf16>
  %sk = tensor.extract_slice %v28[0, 768] [1024, 768] [1, 1] : tensor<1024x2304xbf16> to tensor<1024x768xbf16>
  %sv = tensor.extract_slice %v28[0, 1536] [1024, 768] [1, 1] : tensor<1024x2304xbf16> to tensor<1024x768xbf16>
  %v29 = tensor.expand_shape %sq [[0, 1], [2, 3]] output_shape [8, 128, 12, 64] : tensor<1024x768xbf16> into tensor<8x128x12x64xbf16>
  %v35 = tensor.expand_shape %sk [[0, 1], [2, 3]] output_shape [8, 128, 12, 64] : tensor<1024x768xbf16> into tensor<8x128x12x64xbf16>
  %v41 = tensor.expand_shape %sv [[0, 1], [2, 3]] output_shape [8, 128, 12, 64] : tensor<1024x768xbf16> into tensor<8x128x12x64xbf16>
  %e42 = tensor.empty() : tensor<8x12x128x64xbf16>
  %v43 = linalg.transpose ins(%v29 : tensor<8x128x12x64xbf16>) outs(%e42 : tensor<8x12x128x64xbf16>) permutation = [0, 2, 1, 3]
  %e44 = tensor.empty() : tensor<8x12x64x128xbf16>
  %v45 = linalg.transpose ins(%v35 : tensor<8x128x12x64xbf16>) outs(%e44 : tensor<8x12x64x128xbf16>) permutation = [0, 2, 3, 1]
  %e46 = tensor.empty() : tensor<8x12x128x64xbf16>
  %v47 = linalg.transpose ins(%v41 : tensor<8x128x12x64xbf16>) outs(%e46 : tensor<8x12x128x64xbf16>) permutation = [0, 2, 1, 3]
  %e48 = tensor.empty() : tensor<8x12x128x128xbf16>
  %z49 = linalg.fill ins(%cst0 : bf16) outs(%e48 : tensor<8x12x128x128xbf16>) -> tensor<8x12x128x128xbf16>
  // scores = q @ k^T (aten.matmul on [B, H, S, Dh] x [B, H, Dh, S])
  %v50 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%v43, %v45 : tensor<8x12x128x64xbf16>, tensor<8x12x64x128xbf16>) outs(%z49 : tensor<8x12x128x128xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %p = arith.mulf %a0, %a1 : bf16
      %s = arith.addf %out, %p : bf16
      linalg.yield %s : bf16
  } -> tensor<8x12x128x128xbf16>
  %e51 = tensor.empty() : tensor<8x12x128x128xbf16>
  // scores / sqrt(Dh)
  %v52 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v50 : tensor<8x12x128x128xbf16>) outs(%e51 : tensor<8x12x128x128xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %c = arith.constant 1.250000e-01 : bf16
      %s = arith.mulf %a0, %c : bf16
      linalg.yield %s : bf16
  } -> tensor<8x12x128x128xbf16>
  // the causal mask: the model's bias buffer, a constant
  %mask = arith.constant dense_resource<causal_mask> : tensor<128x128xi1>
  %e53 = tensor.empty() : tensor<8x12x128x128xbf16>
  // torch.where(mask, scores, -inf)
  %v54 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%mask, %v52 : tensor<128x128xi1>, tensor<8x12x128x128xbf16>) outs(%e53 : tensor<8x12x128x128xbf16>) {
    ^bb0(%a0: i1, %a1: bf16, %out: bf16):
      %ninf = arith.constant 0xFF80 : bf16
      %s = arith.select %a0, %a1, %ninf : bf16
      linalg.yield %s : bf16
  } -> tensor<8x12x128x128xbf16>
  %e55 = tensor.empty() : tensor<8x12x128x128xbf16>
  %v56 = linalg.softmax dimension(3) ins(%v54 : tensor<8x12x128x128xbf16>) outs(%e55 : tensor<8x12x128x128xbf16>) -> tensor<8x12x128x128xbf16>
  %e57 = tensor.empty() : tensor<8x12x128x64xbf16>
  %z58 = linalg.fill ins(%cst0 : bf16) outs(%e57 : tensor<8x12x128x64xbf16>) -> tensor<8x12x128x64xbf16>
  // context = probs @ v
  %v59 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%v56, %v47 : tensor<8x12x128x128xbf16>, tensor<8x12x128x64xbf16>) outs(%z58 : tensor<8x12x128x64xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %p = arith.mulf %a0, %a1 : bf16
      %s = arith.addf %out, %p : bf16
      linalg.yield %s : bf16
  } -> tensor<8x12x128x64xbf16>
  %e60 = tensor.empty() : tensor<8x128x12x64xbf16>
  %v61 = linalg.transpose ins(%v59 : tensor<8x12x128x64xbf16>) outs(%e60 : tensor<8x128x12x64xbf16>) permutation = [0, 2, 1, 3]
  %v62 = tensor.collapse_shape %v61 [[0, 1], [2, 3]] : tensor<8x128x12x64xbf16> into tensor<1024x768xbf16>
  %e63 = tensor.empty() : tensor<1024x768xbf16>
  %z64 = linalg.fill ins(%cst0 : bf16) outs(%e63 : tensor<1024x768xbf16>) -> tensor<1024x768xbf16>
  // output projection
  %v65 = linalg.matmul ins(%v62, %attn_c_proj_weight : tensor<1024x768xbf16>, tensor<768x768xbf16>) outs(%z64 : tensor<1024x768xbf16>) -> tensor<1024x768xbf16>
  %e66 = tensor.empty() : tensor<1024x768xbf16>
  %v67 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%v65, %attn_c_proj_bias : tensor<1024x768xbf16>, tensor<768xbf16>) outs(%e66 : tensor<1024x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.addf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<1024x768xbf16>
  %v68 = tensor.expand_shape %v67 [[0, 1], [2]] output_shape [8, 128, 768] : tensor<1024x768xbf16> into tensor<8x128x768xbf16>
  %e69 = tensor.empty() : tensor<8x128x768xbf16>
  // residual
  %v70 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %v68 : tensor<8x128x768xbf16>, tensor<8x128x768xbf16>) outs(%e69 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.addf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  // ln_2: torch-mlir's decomposition of aten.native_layer_norm
  %e71 = tensor.empty() : tensor<8x128xbf16>
  %z72 = linalg.fill ins(%cst0 : bf16) outs(%e71 : tensor<8x128xbf16>) -> tensor<8x128xbf16>
  %v73 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%v70 : tensor<8x128x768xbf16>) outs(%z72 : tensor<8x128xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %s = arith.addf %a0, %out : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128xbf16>
  %v74 = tensor.expand_shape %v73 [[0], [1, 2]] output_shape [8, 128, 1] : tensor<8x128xbf16> into tensor<8x128x1xbf16>
  %e75 = tensor.empty() : tensor<8x128x1xbf16>
  %v76 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v74 : tensor<8x128x1xbf16>) outs(%e75 : tensor<8x128x1xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %n = arith.constant 7.680000e+02 : bf16
      %m = arith.divf %a0, %n : bf16
      linalg.yield %m : bf16
  } -> tensor<8x128x1xbf16>
  %e77 = tensor.empty() : tensor<8x128x768xbf16>
  %v78 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v70, %v76 : tensor<8x128x768xbf16>, tensor<8x128x1xbf16>) outs(%e77 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.subf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  %e79 = tensor.empty() : tensor<8x128x768xbf16>
  %v80 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v78 : tensor<8x128x768xbf16>) outs(%e79 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %s = arith.mulf %a0, %a0 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  %e81 = tensor.empty() : tensor<8x128xbf16>
  %z82 = linalg.fill ins(%cst0 : bf16) outs(%e81 : tensor<8x128xbf16>) -> tensor<8x128xbf16>
  %v83 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%v80 : tensor<8x128x768xbf16>) outs(%z82 : tensor<8x128xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %s = arith.addf %a0, %out : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128xbf16>
  %v84 = tensor.expand_shape %v83 [[0], [1, 2]] output_shape [8, 128, 1] : tensor<8x128xbf16> into tensor<8x128x1xbf16>
  %e85 = tensor.empty() : tensor<8x128x1xbf16>
  %v86 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v84 : tensor<8x128x1xbf16>) outs(%e85 : tensor<8x128x1xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %n = arith.constant 7.680000e+02 : bf16
      %eps = arith.constant 9.999999e-06 : bf16
      %v = arith.divf %a0, %n : bf16
      %ve = arith.addf %v, %eps : bf16
      %r = math.rsqrt %ve : bf16
      linalg.yield %r : bf16
  } -> tensor<8x128x1xbf16>
  %e87 = tensor.empty() : tensor<8x128x768xbf16>
  %v88 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v78, %v86 : tensor<8x128x768xbf16>, tensor<8x128x1xbf16>) outs(%e87 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.mulf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  %e89 = tensor.empty() : tensor<8x128x768xbf16>
  %v90 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v88, %ln_2_weight : tensor<8x128x768xbf16>, tensor<768xbf16>) outs(%e89 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.mulf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  %e91 = tensor.empty() : tensor<8x128x768xbf16>
  %v92 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v90, %ln_2_bias : tensor<8x128x768xbf16>, tensor<768xbf16>) outs(%e91 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.addf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  %v93 = tensor.collapse_shape %v92 [[0, 1], [2]] : tensor<8x128x768xbf16> into tensor<1024x768xbf16>
  %e94 = tensor.empty() : tensor<1024x3072xbf16>
  %z95 = linalg.fill ins(%cst0 : bf16) outs(%e94 : tensor<1024x3072xbf16>) -> tensor<1024x3072xbf16>
  // mlp.c_fc
  %v96 = linalg.matmul ins(%v93, %mlp_c_fc_weight : tensor<1024x768xbf16>, tensor<768x3072xbf16>) outs(%z95 : tensor<1024x3072xbf16>) -> tensor<1024x3072xbf16>
  %e97 = tensor.empty() : tensor<1024x3072xbf16>
  %v98 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%v96, %mlp_c_fc_bias : tensor<1024x3072xbf16>, tensor<3072xbf16>) outs(%e97 : tensor<1024x3072xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.addf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<1024x3072xbf16>
  %e99 = tensor.empty() : tensor<1024x3072xbf16>
  // gelu_new: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))
  %v100 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%v98 : tensor<1024x3072xbf16>) outs(%e99 : tensor<1024x3072xbf16>) {
    ^bb0(%a0: bf16, %out: bf16):
      %c0 = arith.constant 5.000000e-01 : bf16
      %c1 = arith.constant 1.000000e+00 : bf16
      %c2 = arith.constant 4.471500e-02 : bf16
      %c3 = arith.constant 7.968750e-01 : bf16
      %x2 = arith.mulf %a0, %a0 : bf16
      %x3 = arith.mulf %x2, %a0 : bf16
      %t0 = arith.mulf %x3, %c2 : bf16
      %t1 = arith.addf %a0, %t0 : bf16
      %t2 = arith.mulf %t1, %c3 : bf16
      %t3 = math.tanh %t2 : bf16
      %t4 = arith.addf %t3, %c1 : bf16
      %t5 = arith.mulf %a0, %c0 : bf16
      %t6 = arith.mulf %t5, %t4 : bf16
      linalg.yield %t6 : bf16
  } -> tensor<1024x3072xbf16>
  %e101 = tensor.empty() : tensor<1024x768xbf16>
  %z102 = linalg.fill ins(%cst0 : bf16) outs(%e101 : tensor<1024x768xbf16>) -> tensor<1024x768xbf16>
  // mlp.c_proj
  %v103 = linalg.matmul ins(%v100, %mlp_c_proj_weight : tensor<1024x3072xbf16>, tensor<3072x768xbf16>) outs(%z102 : tensor<1024x768xbf16>) -> tensor<1024x768xbf16>
  %e104 = tensor.empty() : tensor<1024x768xbf16>
  %v105 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%v103, %mlp_c_proj_bias : tensor<1024x768xbf16>, tensor<768xbf16>) outs(%e104 : tensor<1024x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.addf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<1024x768xbf16>
  %v106 = tensor.expand_shape %v105 [[0, 1], [2]] output_shape [8, 128, 768] : tensor<1024x768xbf16> into tensor<8x128x768xbf16>
  %e107 = tensor.empty() : tensor<8x128x768xbf16>
  // residual
  %v108 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v70, %v106 : tensor<8x128x768xbf16>, tensor<8x128x768xbf16>) outs(%e107 : tensor<8x128x768xbf16>) {
    ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
      %s = arith.addf %a0, %a1 : bf16
      linalg.yield %s : bf16
  } -> tensor<8x128x768xbf16>
  return %v108 : tensor<8x128x768xbf16>
}

{-#
  dialect_resources: {
    builtin: {
      causal_mask: "0x01000000"
    }
  }
#-}
