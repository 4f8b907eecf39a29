// RUN: stage-opt %s --stage-symbolize="B=8,D=64,F=64,H=4,Dh=16" | FileCheck %s

// The annotations decide what the values alone cannot: D and F are both 64
// here. A name is an expression of listed symbols ("H*Dh"), and it spreads
// through the ops to every dimension of its class, so the reshape into heads
// is consistent. The annotations are consumed.

// CHECK:      stage.input "x" : !stage.tensor<[B, D], bf16>
// CHECK-NEXT: stage.param "w1" : !stage.tensor<[D, F], bf16>
// CHECK-NEXT: stage.param "wq" : !stage.tensor<[D, H*Dh], bf16>
// CHECK-NEXT: stage.einsum "bd,df->bf" {{.*}} -> !stage.tensor<[B, F], bf16>
// CHECK-NEXT: stage.einsum "bd,dk->bk" {{.*}} -> !stage.tensor<[B, H*Dh], bf16>
// CHECK-NEXT: stage.reshape {{.*}} : !stage.tensor<[B, H*Dh], bf16> -> !stage.tensor<[B, H, Dh], bf16>
func.func @annotated() -> (!stage.tensor<[8, 64], bf16>, !stage.tensor<[8, 4, 16], bf16>) {
  %x = stage.input "x" {stage.dims = ["B", "D"]} : !stage.tensor<[8, 64], bf16>
  %w1 = stage.param "w1" {stage.dims = ["D", "F"]} : !stage.tensor<[64, 64], bf16>
  %wq = stage.param "wq" {stage.dims = ["D", "H*Dh"]} : !stage.tensor<[64, 64], bf16>
  %h = stage.einsum "bd,df->bf" %x, %w1 : (!stage.tensor<[8, 64], bf16>, !stage.tensor<[64, 64], bf16>) -> !stage.tensor<[8, 64], bf16>
  %q = stage.einsum "bd,dk->bk" %x, %wq : (!stage.tensor<[8, 64], bf16>, !stage.tensor<[64, 64], bf16>) -> !stage.tensor<[8, 64], bf16>
  %r = stage.reshape %q : !stage.tensor<[8, 64], bf16> -> !stage.tensor<[8, 4, 16], bf16>
  return %h, %r : !stage.tensor<[8, 64], bf16>, !stage.tensor<[8, 4, 16], bf16>
}
