// RUN: stage-opt %s --convert-linalg-to-stage | FileCheck %s

// Contractions: matmul, batch_matmul, matvec, linalg.contract and a generic
// multiply-accumulate become einsums read from their indexing maps; the
// initializers (tensor.empty, linalg.fill) disappear; arguments become
// inputs (named by stage.input, else argN) or weights (stage.param); a
// transpose that only feeds an einsum becomes the einsum's indexing.

// CHECK-LABEL: func.func @named
// CHECK: %[[V0:.*]] = stage.input "arg0" : !stage.tensor<[8, 16], f32>
// CHECK-NEXT: %[[V1:.*]] = stage.param "w" : !stage.tensor<[16, 32], f32>
// CHECK-NEXT: %[[V2:.*]] = stage.input "arg2" : !stage.tensor<[4, 8, 16], f32>
// CHECK-NEXT: %[[V3:.*]] = stage.param "c" : !stage.tensor<[4, 16, 32], f32>
// CHECK-NEXT: %[[V4:.*]] = stage.input "v" : !stage.tensor<[16], f32>
// CHECK-NEXT: %[[V5:.*]] = stage.input "arg5" : !stage.tensor<[2, 4, 8, 16], f32>
// CHECK-NEXT: %[[V6:.*]] = stage.einsum "ac,cb->ab" %[[V0]], %[[V1]] : (!stage.tensor<[8, 16], f32>, !stage.tensor<[16, 32], f32>) -> !stage.tensor<[8, 32], f32>
// CHECK-NEXT: %[[V7:.*]] = stage.einsum "abd,adc->abc" %[[V2]], %[[V3]] : (!stage.tensor<[4, 8, 16], f32>, !stage.tensor<[4, 16, 32], f32>) -> !stage.tensor<[4, 8, 32], f32>
// CHECK-NEXT: %[[V8:.*]] = stage.einsum "ab,b->a" %[[V0]], %[[V4]] : (!stage.tensor<[8, 16], f32>, !stage.tensor<[16], f32>) -> !stage.tensor<[8], f32>
// CHECK-NEXT: %[[V9:.*]] = stage.einsum "ac,cb->ab" %[[V0]], %[[V1]] : (!stage.tensor<[8, 16], f32>, !stage.tensor<[16, 32], f32>) -> !stage.tensor<[8, 32], f32>
// CHECK-NEXT: %[[V10:.*]] = stage.einsum "abce,abde->abcd" %[[V5]], %[[V5]] : (!stage.tensor<[2, 4, 8, 16], f32>, !stage.tensor<[2, 4, 8, 16], f32>) -> !stage.tensor<[2, 4, 8, 8], f32>
// CHECK-NEXT: return %[[V6]], %[[V7]], %[[V8]], %[[V9]], %[[V10]] : !stage.tensor<[8, 32], f32>, !stage.tensor<[4, 8, 32], f32>, !stage.tensor<[8], f32>, !stage.tensor<[8, 32], f32>, !stage.tensor<[2, 4, 8, 8], f32>

func.func @named(%a: tensor<8x16xf32>, %w: tensor<16x32xf32> {stage.param = "w"},
                 %b: tensor<4x8x16xf32>, %c: tensor<4x16x32xf32> {stage.param = "c"},
                 %v: tensor<16xf32> {stage.input = "v"}, %q: tensor<2x4x8x16xf32>) -> (tensor<8x32xf32>, tensor<4x8x32xf32>, tensor<8xf32>, tensor<8x32xf32>, tensor<2x4x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm = linalg.matmul ins(%a, %w : tensor<8x16xf32>, tensor<16x32xf32>) outs(%z0 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e1 = tensor.empty() : tensor<4x8x32xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %bmm = linalg.batch_matmul ins(%b, %c : tensor<4x8x16xf32>, tensor<4x16x32xf32>) outs(%z1 : tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8xf32>) -> tensor<8xf32>
  %mv = linalg.matvec ins(%a, %v : tensor<8x16xf32>, tensor<16xf32>) outs(%z2 : tensor<8xf32>) -> tensor<8xf32>
  %eT = tensor.empty() : tensor<16x8xf32>
  %aT = linalg.transpose ins(%a : tensor<8x16xf32>) outs(%eT : tensor<16x8xf32>) permutation = [1, 0]
  %ct = linalg.contract indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%aT, %w : tensor<16x8xf32>, tensor<16x32xf32>) outs(%z0 : tensor<8x32xf32>) -> tensor<8x32xf32>
  // q k^T as torch-mlir writes aten.matmul on 4-d operands
  %e3 = tensor.empty() : tensor<2x4x8x8xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %qk = linalg.generic {indexing_maps = [affine_map<(b, h, s, t, d) -> (b, h, s, d)>, affine_map<(b, h, s, t, d) -> (b, h, t, d)>, affine_map<(b, h, s, t, d) -> (b, h, s, t)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %q : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) outs(%z3 : tensor<2x4x8x8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %o, %p : f32
      linalg.yield %s : f32
  } -> tensor<2x4x8x8xf32>
  return %mm, %bmm, %mv, %ct, %qk : tensor<8x32xf32>, tensor<4x8x32xf32>, tensor<8xf32>, tensor<8x32xf32>, tensor<2x4x8x8xf32>
}
