// A two-layer MLP as linalg-on-tensors frontends emit it: weights are plain
// function arguments, nothing is annotated (the second weight has a
// location name, as importers that keep parameter names give them).
func.func @mlp(%x: tensor<32x64xf32>, %w1: tensor<64x256xf32>,
               %w2: tensor<256x64xf32> loc("fc2.weight")) -> tensor<32x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<32x256xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32x256xf32>) -> tensor<32x256xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<32x64xf32>, tensor<64x256xf32>) outs(%f1 : tensor<32x256xf32>) -> tensor<32x256xf32>
  %e2 = tensor.empty() : tensor<32x64xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<32x256xf32>, tensor<256x64xf32>) outs(%f2 : tensor<32x64xf32>) -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}
