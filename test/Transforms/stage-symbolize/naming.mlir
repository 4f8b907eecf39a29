// RUN: stage-opt %s --stage-symbolize="B=8,S=128,D=64,F=256,H=4" | FileCheck %s

// Extents become the listed symbols; the values become the module's
// bindings. A reshape names what the list does not: the 16 of a split of D
// into H heads is D/H, and the merged rows are B*S.

// CHECK:      module attributes {stage.bindings = {B = 8 : i64, D = 64 : i64, F = 256 : i64, H = 4 : i64, S = 128 : i64}}
// CHECK:      func.func @mlp() -> !stage.tensor<[B, S, D], bf16>
// CHECK-NEXT: %{{[0-9]+}} = stage.input "x" : !stage.tensor<[B, S, D], bf16>
// CHECK-NEXT: %{{[0-9]+}} = stage.param "w1" : !stage.tensor<[D, F], bf16>
// CHECK-NEXT: %{{[0-9]+}} = stage.param "w2" : !stage.tensor<[F, D], bf16>
// CHECK-NEXT: %{{[0-9]+}} = stage.einsum "bsd,df->bsf" %{{[0-9]+}}, %{{[0-9]+}} : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, S, F], bf16>
// CHECK-NEXT: %{{[0-9]+}} = stage.einsum "bsf,fd->bsd" %{{[0-9]+}}, %{{[0-9]+}} : (!stage.tensor<[B, S, F], bf16>, !stage.tensor<[F, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
// CHECK-NEXT: %{{[0-9]+}} = stage.reshape %{{[0-9]+}} : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, S, H, D/H], bf16>
// CHECK-NEXT: %{{[0-9]+}} = stage.reshape %{{[0-9]+}} : !stage.tensor<[B, S, H, D/H], bf16> -> !stage.tensor<[B*S, D], bf16>
// CHECK-NEXT: %{{[0-9]+}} = stage.reshape %{{[0-9]+}} : !stage.tensor<[B*S, D], bf16> -> !stage.tensor<[B, S, D], bf16>

func.func @mlp() -> !stage.tensor<[8, 128, 64], bf16> {
  %x = stage.input "x" : !stage.tensor<[8, 128, 64], bf16>
  %w1 = stage.param "w1" : !stage.tensor<[64, 256], bf16>
  %w2 = stage.param "w2" : !stage.tensor<[256, 64], bf16>
  %h = stage.einsum "bsd,df->bsf" %x, %w1 : (!stage.tensor<[8, 128, 64], bf16>, !stage.tensor<[64, 256], bf16>) -> !stage.tensor<[8, 128, 256], bf16>
  %y = stage.einsum "bsf,fd->bsd" %h, %w2 : (!stage.tensor<[8, 128, 256], bf16>, !stage.tensor<[256, 64], bf16>) -> !stage.tensor<[8, 128, 64], bf16>
  %r = stage.reshape %y : !stage.tensor<[8, 128, 64], bf16> -> !stage.tensor<[8, 128, 4, 16], bf16>
  %t = stage.reshape %r : !stage.tensor<[8, 128, 4, 16], bf16> -> !stage.tensor<[1024, 64], bf16>
  %u = stage.reshape %t : !stage.tensor<[1024, 64], bf16> -> !stage.tensor<[8, 128, 64], bf16>
  return %u : !stage.tensor<[8, 128, 64], bf16>
}
