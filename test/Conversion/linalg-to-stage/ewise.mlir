// RUN: stage-opt %s --convert-linalg-to-stage | FileCheck %s

// Elementwise payloads: one arith or math op of a known kind (operands in
// the payload's order, x*x as square), GELU and SiLU by their composites, a
// cast, linalg.map and linalg.elementwise; anything else is a generic op
// costed one FLOP per arithmetic op.

// CHECK-LABEL: func.func @ewise
// CHECK: %[[V0:.*]] = stage.input "arg0" : !stage.tensor<[8, 16], bf16>
// CHECK-NEXT: %[[V1:.*]] = stage.input "arg1" : !stage.tensor<[8, 16], bf16>
// CHECK-NEXT: %[[V2:.*]] = stage.param "bias" : !stage.tensor<[16], bf16>
// CHECK-NEXT: %[[V3:.*]] = stage.ewise add %[[V0]], %[[V2]] : (!stage.tensor<[8, 16], bf16>, !stage.tensor<[16], bf16>) -> !stage.tensor<[8, 16], bf16>
// CHECK-NEXT: %[[V4:.*]] = stage.ewise sub %[[V1]], %[[V0]] : (!stage.tensor<[8, 16], bf16>, !stage.tensor<[8, 16], bf16>) -> !stage.tensor<[8, 16], bf16>
// CHECK-NEXT: %[[V5:.*]] = stage.ewise square %[[V0]] : (!stage.tensor<[8, 16], bf16>) -> !stage.tensor<[8, 16], bf16>
// CHECK-NEXT: %[[V6:.*]] = stage.ewise gelu %[[V0]] : (!stage.tensor<[8, 16], bf16>) -> !stage.tensor<[8, 16], bf16>
// CHECK-NEXT: %[[V7:.*]] = stage.ewise silu %[[V0]] : (!stage.tensor<[8, 16], bf16>) -> !stage.tensor<[8, 16], bf16>
// CHECK-NEXT: %[[V8:.*]] = stage.ewise generic %[[V0]] {flops_per_element = 1 : i64} : (!stage.tensor<[8, 16], bf16>) -> !stage.tensor<[8, 16], bf16>
// CHECK-NEXT: %[[V9:.*]] = stage.ewise exp %[[V0]] : (!stage.tensor<[8, 16], bf16>) -> !stage.tensor<[8, 16], bf16>
// CHECK-NEXT: %[[V10:.*]] = stage.ewise cast %[[V0]] : (!stage.tensor<[8, 16], bf16>) -> !stage.tensor<[8, 16], f32>
// CHECK-NEXT: %[[V11:.*]] = stage.ewise max %[[V0]], %[[V1]] : (!stage.tensor<[8, 16], bf16>, !stage.tensor<[8, 16], bf16>) -> !stage.tensor<[8, 16], bf16>
// CHECK-NEXT: %[[V12:.*]] = stage.ewise tanh %[[V0]] : (!stage.tensor<[8, 16], bf16>) -> !stage.tensor<[8, 16], bf16>
// CHECK-NEXT: return %[[V3]], %[[V4]], %[[V5]], %[[V6]], %[[V7]], %[[V8]], %[[V9]], %[[V10]], %[[V11]], %[[V12]] : !stage.tensor<[8, 16], bf16>, !stage.tensor<[8, 16], bf16>, !stage.tensor<[8, 16], bf16>, !stage.tensor<[8, 16], bf16>, !stage.tensor<[8, 16], bf16>, !stage.tensor<[8, 16], bf16>, !stage.tensor<[8, 16], bf16>, !stage.tensor<[8, 16], f32>, !stage.tensor<[8, 16], bf16>, !stage.tensor<[8, 16], bf16>

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @ewise(%x: tensor<8x16xbf16>, %y: tensor<8x16xbf16>, %bias: tensor<16xbf16> {stage.param = "bias"}) -> (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>) {
  %e = tensor.empty() : tensor<8x16xbf16>
  // bias add, broadcast over rows
  %add = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %bias : tensor<8x16xbf16>, tensor<16xbf16>) outs(%e : tensor<8x16xbf16>) {
    ^bb0(%a: bf16, %b: bf16, %o: bf16):
      %s = arith.addf %a, %b : bf16
      linalg.yield %s : bf16
  } -> tensor<8x16xbf16>
  // operands in the payload's order: y - x
  %sub = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<8x16xbf16>, tensor<8x16xbf16>) outs(%e : tensor<8x16xbf16>) {
    ^bb0(%a: bf16, %b: bf16, %o: bf16):
      %s = arith.subf %b, %a : bf16
      linalg.yield %s : bf16
  } -> tensor<8x16xbf16>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xbf16>) outs(%e : tensor<8x16xbf16>) {
    ^bb0(%a: bf16, %o: bf16):
      %s = arith.mulf %a, %a : bf16
      linalg.yield %s : bf16
  } -> tensor<8x16xbf16>
  // GELU, tanh form
  %gelu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xbf16>) outs(%e : tensor<8x16xbf16>) {
    ^bb0(%a: bf16, %o: bf16):
      %half = arith.constant 5.000000e-01 : bf16
      %one = arith.constant 1.000000e+00 : bf16
      %c = arith.constant 4.467770e-02 : bf16
      %k = arith.constant 7.968750e-01 : bf16
      %a2 = arith.mulf %a, %a : bf16
      %a3 = arith.mulf %a2, %a : bf16
      %t0 = arith.mulf %a3, %c : bf16
      %t1 = arith.addf %a, %t0 : bf16
      %t2 = arith.mulf %t1, %k : bf16
      %t3 = math.tanh %t2 : bf16
      %t4 = arith.addf %t3, %one : bf16
      %t5 = arith.mulf %a, %half : bf16
      %r = arith.mulf %t5, %t4 : bf16
      linalg.yield %r : bf16
  } -> tensor<8x16xbf16>
  // SiLU: x * sigmoid(x)
  %silu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xbf16>) outs(%e : tensor<8x16xbf16>) {
    ^bb0(%a: bf16, %o: bf16):
      %one = arith.constant 1.000000e+00 : bf16
      %n = arith.negf %a : bf16
      %ex = math.exp %n : bf16
      %d = arith.addf %ex, %one : bf16
      %r = arith.divf %a, %d : bf16
      linalg.yield %r : bf16
  } -> tensor<8x16xbf16>
  // a scaling: one FLOP per element, no named kind
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xbf16>) outs(%e : tensor<8x16xbf16>) {
    ^bb0(%a: bf16, %o: bf16):
      %c = arith.constant 1.250000e-01 : bf16
      %r = arith.mulf %a, %c : bf16
      linalg.yield %r : bf16
  } -> tensor<8x16xbf16>
  %map = linalg.map { math.exp } ins(%x : tensor<8x16xbf16>) outs(%e : tensor<8x16xbf16>)
  %ef = tensor.empty() : tensor<8x16xf32>
  %cast = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xbf16>) outs(%ef : tensor<8x16xf32>) {
    ^bb0(%a: bf16, %o: f32):
      %r = arith.extf %a : bf16 to f32
      linalg.yield %r : f32
  } -> tensor<8x16xf32>
  %elt = linalg.elementwise kind=#linalg.elementwise_kind<max_signed> ins(%x, %y : tensor<8x16xbf16>, tensor<8x16xbf16>) outs(%e : tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %tanh = linalg.elementwise kind=#linalg.elementwise_kind<tanh> ins(%x : tensor<8x16xbf16>) outs(%e : tensor<8x16xbf16>) -> tensor<8x16xbf16>
  return %add, %sub, %sq, %gelu, %silu, %scaled, %map, %cast, %elt, %tanh : tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>
}
