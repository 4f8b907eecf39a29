// RUN: stage-opt %s --split-input-file --convert-linalg-to-stage | FileCheck %s

// A fused projection (GPT-2's c_attn): one matmul with a [16, 3*8] weight
// and a bias, the result sliced into three equal parts. The slices move to
// the weight and the bias, which become one parameter per part with their
// dimension names divided; each part is an einsum and a bias add of its
// own, and no slice is left.

// CHECK-LABEL: func.func @fused
// CHECK-DAG:  %[[W0:.*]] = stage.param "c_attn.weight.0" {stage.dims = ["D", "H*Dh"]} : !stage.tensor<[16, 8], f32>
// CHECK-DAG:  %[[W1:.*]] = stage.param "c_attn.weight.1" {stage.dims = ["D", "H*Dh"]} : !stage.tensor<[16, 8], f32>
// CHECK-DAG:  %[[W2:.*]] = stage.param "c_attn.weight.2" {stage.dims = ["D", "H*Dh"]} : !stage.tensor<[16, 8], f32>
// CHECK-DAG:  %[[B0:.*]] = stage.param "c_attn.bias.0" : !stage.tensor<[8], f32>
// CHECK-DAG:  %[[B2:.*]] = stage.param "c_attn.bias.2" : !stage.tensor<[8], f32>
// CHECK-NOT:  "c_attn.weight"
// CHECK:      %[[Q:.*]] = stage.einsum "{{.*}}" %{{.*}}, %[[W0]] : (!stage.tensor<[4, 16], f32>, !stage.tensor<[16, 8], f32>) -> !stage.tensor<[4, 8], f32>
// CHECK:      stage.ewise add %[[Q]], %[[B0]]
// CHECK:      %[[V:.*]] = stage.einsum "{{.*}}" %{{.*}}, %[[W2]]
// CHECK:      stage.ewise add %[[V]], %[[B2]]
// CHECK-NOT:  stage.slice
// CHECK:      return
func.func @fused(%x: tensor<4x16xf32> {stage.input = "x"},
                 %w: tensor<16x24xf32> {stage.param = "c_attn.weight", stage.dims = ["D", "3*H*Dh"]},
                 %b: tensor<24xf32> {stage.param = "c_attn.bias"}) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x24xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x24xf32>) -> tensor<4x24xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x24xf32>) outs(%z : tensor<4x24xf32>) -> tensor<4x24xf32>
  %eb = tensor.empty() : tensor<4x24xf32>
  %yb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : tensor<4x24xf32>, tensor<24xf32>) outs(%eb : tensor<4x24xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
  } -> tensor<4x24xf32>
  %q = tensor.extract_slice %yb[0, 0] [4, 8] [1, 1] : tensor<4x24xf32> to tensor<4x8xf32>
  %k = tensor.extract_slice %yb[0, 8] [4, 8] [1, 1] : tensor<4x24xf32> to tensor<4x8xf32>
  %v = tensor.extract_slice %yb[0, 16] [4, 8] [1, 1] : tensor<4x24xf32> to tensor<4x8xf32>
  return %q, %k, %v : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Slices that do not partition the result (two of three parts, or a use of
// the whole) leave the projection fused: splitting it would compute a part
// twice or drop one.

// CHECK-LABEL: func.func @partial
// CHECK:      stage.param "w" : !stage.tensor<[16, 24], f32>
// CHECK:      stage.slice
// CHECK:      stage.slice
// CHECK-LABEL: func.func @whole_used
// CHECK:      stage.param "w" : !stage.tensor<[16, 24], f32>
// CHECK:      stage.slice
func.func @partial(%x: tensor<4x16xf32> {stage.input = "x"},
                   %w: tensor<16x24xf32> {stage.param = "w"}) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x24xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x24xf32>) -> tensor<4x24xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x24xf32>) outs(%z : tensor<4x24xf32>) -> tensor<4x24xf32>
  %q = tensor.extract_slice %y[0, 0] [4, 8] [1, 1] : tensor<4x24xf32> to tensor<4x8xf32>
  %k = tensor.extract_slice %y[0, 8] [4, 8] [1, 1] : tensor<4x24xf32> to tensor<4x8xf32>
  return %q, %k : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @whole_used(%x: tensor<4x16xf32> {stage.input = "x"},
                      %w: tensor<16x24xf32> {stage.param = "w"}) -> (tensor<4x12xf32>, tensor<4x12xf32>, tensor<4x24xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x24xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x24xf32>) -> tensor<4x24xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x24xf32>) outs(%z : tensor<4x24xf32>) -> tensor<4x24xf32>
  %a = tensor.extract_slice %y[0, 0] [4, 12] [1, 1] : tensor<4x24xf32> to tensor<4x12xf32>
  %b = tensor.extract_slice %y[0, 12] [4, 12] [1, 1] : tensor<4x24xf32> to tensor<4x12xf32>
  return %a, %b, %y : tensor<4x12xf32>, tensor<4x12xf32>, tensor<4x24xf32>
}

// -----

// An interleaved layout (GPT-NeoX's): the result viewed as [4, 2, 12], two
// heads of q|k|v side by side, sliced along the last dimension. The view
// moves before the matmul onto the weight, declared as [16, 2, 12] and then
// split into three [16, 2, 4] parameters; the einsum computes each part.
// With another use of the matmul's result, nothing moves.

// CHECK-LABEL: func.func @interleaved
// CHECK-DAG:  %[[W0:.*]] = stage.param "w.0" : !stage.tensor<[16, 2, 4], f32>
// CHECK-DAG:  stage.param "w.2" : !stage.tensor<[16, 2, 4], f32>
// CHECK-NOT:  stage.slice
// CHECK:      stage.einsum "{{.*}}" %{{.*}}, %[[W0]] : (!stage.tensor<[4, 16], f32>, !stage.tensor<[16, 2, 4], f32>) -> !stage.tensor<[4, 2, 4], f32>
// CHECK-LABEL: func.func @interleaved_whole_used
// CHECK:      stage.param "w" : !stage.tensor<[16, 24], f32>
// CHECK:      stage.reshape
// CHECK:      stage.slice
func.func @interleaved(%x: tensor<4x16xf32> {stage.input = "x"},
                       %w: tensor<16x24xf32> {stage.param = "w"}) -> (tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x24xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x24xf32>) -> tensor<4x24xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x24xf32>) outs(%z : tensor<4x24xf32>) -> tensor<4x24xf32>
  %v = tensor.expand_shape %y [[0], [1, 2]] output_shape [4, 2, 12] : tensor<4x24xf32> into tensor<4x2x12xf32>
  %q = tensor.extract_slice %v[0, 0, 0] [4, 2, 4] [1, 1, 1] : tensor<4x2x12xf32> to tensor<4x2x4xf32>
  %k = tensor.extract_slice %v[0, 0, 4] [4, 2, 4] [1, 1, 1] : tensor<4x2x12xf32> to tensor<4x2x4xf32>
  %u = tensor.extract_slice %v[0, 0, 8] [4, 2, 4] [1, 1, 1] : tensor<4x2x12xf32> to tensor<4x2x4xf32>
  return %q, %k, %u : tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>
}
func.func @interleaved_whole_used(%x: tensor<4x16xf32> {stage.input = "x"},
                                  %w: tensor<16x24xf32> {stage.param = "w"}) -> (tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x24xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x24xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x24xf32>) -> tensor<4x24xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x24xf32>) outs(%z : tensor<4x24xf32>) -> tensor<4x24xf32>
  %v = tensor.expand_shape %y [[0], [1, 2]] output_shape [4, 2, 12] : tensor<4x24xf32> into tensor<4x2x12xf32>
  %q = tensor.extract_slice %v[0, 0, 0] [4, 2, 4] [1, 1, 1] : tensor<4x2x12xf32> to tensor<4x2x4xf32>
  %k = tensor.extract_slice %v[0, 0, 4] [4, 2, 4] [1, 1, 1] : tensor<4x2x12xf32> to tensor<4x2x4xf32>
  %u = tensor.extract_slice %v[0, 0, 8] [4, 2, 4] [1, 1, 1] : tensor<4x2x12xf32> to tensor<4x2x4xf32>
  return %q, %k, %u, %y : tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x24xf32>
}
