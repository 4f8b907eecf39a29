// RUN: stage-opt %s --convert-linalg-to-stage | FileCheck %s

// A linear layer as the frontends flatten it: [B, S, D] collapsed to rows,
// a batch_matmul over one batch, a bias added on rows and the result
// expanded back. The converted graph keeps the model's dimensions: the
// rows fold into the einsum, the unit batch disappears, the bias add runs on
// [4, 8, 32] and the reshapes cancel. The transposed weight becomes the
// einsum's indexing, and a transpose of an einsum's result its result term.

// CHECK-LABEL: func.func @linear
// CHECK:      %[[X:.*]] = stage.input "x" : !stage.tensor<[4, 8, 16], f32>
// CHECK-NEXT: %[[W:.*]] = stage.param "w" : !stage.tensor<[32, 16], f32>
// CHECK-NEXT: %[[B:.*]] = stage.param "b" : !stage.tensor<[32], f32>
// CHECK-NEXT: %[[Y:.*]] = stage.einsum "{{.*}}" %[[X]], %[[W]] : (!stage.tensor<[4, 8, 16], f32>, !stage.tensor<[32, 16], f32>) -> !stage.tensor<[4, 8, 32], f32>
// CHECK-NEXT: %[[Z:.*]] = stage.ewise add %[[Y]], %[[B]] : (!stage.tensor<[4, 8, 32], f32>, !stage.tensor<[32], f32>) -> !stage.tensor<[4, 8, 32], f32>
// CHECK-NEXT: %[[T:.*]] = stage.einsum "{{.*}}" %[[Z]], %[[Z]] : (!stage.tensor<[4, 8, 32], f32>, !stage.tensor<[4, 8, 32], f32>) -> !stage.tensor<[8, 8, 4], f32>
// CHECK-NEXT: return %[[Z]], %[[T]]
// CHECK-NEXT: }
func.func @linear(%x: tensor<4x8x16xf32> {stage.input = "x"},
                  %w: tensor<32x16xf32> {stage.param = "w"},
                  %b: tensor<32xf32> {stage.param = "b"}) -> (tensor<4x8x32xf32>, tensor<8x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %rows = tensor.collapse_shape %x [[0, 1], [2]] : tensor<4x8x16xf32> into tensor<32x16xf32>
  %x3 = tensor.expand_shape %rows [[0, 1], [2]] output_shape [1, 32, 16] : tensor<32x16xf32> into tensor<1x32x16xf32>
  %et = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%et : tensor<16x32xf32>) permutation = [1, 0]
  %w3 = tensor.expand_shape %wt [[0, 1], [2]] output_shape [1, 16, 32] : tensor<16x32xf32> into tensor<1x16x32xf32>
  %e = tensor.empty() : tensor<1x32x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x32x32xf32>) -> tensor<1x32x32xf32>
  %y = linalg.batch_matmul ins(%x3, %w3 : tensor<1x32x16xf32>, tensor<1x16x32xf32>) outs(%z : tensor<1x32x32xf32>) -> tensor<1x32x32xf32>
  %eb = tensor.empty() : tensor<1x32x32xf32>
  %yb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y, %b : tensor<1x32x32xf32>, tensor<32xf32>) outs(%eb : tensor<1x32x32xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
  } -> tensor<1x32x32xf32>
  %flat = tensor.collapse_shape %yb [[0, 1], [2]] : tensor<1x32x32xf32> into tensor<32x32xf32>
  %out = tensor.expand_shape %flat [[0, 1], [2]] output_shape [4, 8, 32] : tensor<32x32xf32> into tensor<4x8x32xf32>
  // a Gram matrix per sequence position, transposed
  %eg = tensor.empty() : tensor<4x8x8xf32>
  %zg = linalg.fill ins(%zero : f32) outs(%eg : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(b, s, t, k) -> (b, s, k)>, affine_map<(b, s, t, k) -> (b, t, k)>, affine_map<(b, s, t, k) -> (b, s, t)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%out, %out : tensor<4x8x32xf32>, tensor<4x8x32xf32>) outs(%zg : tensor<4x8x8xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %o, %m : f32
      linalg.yield %s : f32
  } -> tensor<4x8x8xf32>
  %egt = tensor.empty() : tensor<8x8x4xf32>
  %gt = linalg.transpose ins(%g : tensor<4x8x8xf32>) outs(%egt : tensor<8x8x4xf32>) permutation = [1, 2, 0]
  return %out, %gt : tensor<4x8x32xf32>, tensor<8x8x4xf32>
}
