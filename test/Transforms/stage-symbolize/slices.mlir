// RUN: stage-opt %s --stage-symbolize="B=8,D=64,H=4,Dh=16" | FileCheck %s

// A slice that is one of n equal parts has 1/n of its input's extent: the
// thirds of a fused projection annotated "3*H*Dh" are H*Dh, not D (whose
// value, 64, they share), and the offsets follow. An annotation's
// consequences come before matches by value.

// CHECK:      %[[W:.*]] = stage.param "qkv" : !stage.tensor<[D, 3*H*Dh], bf16>
// CHECK:      stage.einsum "bd,dc->bc" %{{.*}}, %[[W]] : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, 3*H*Dh], bf16>) -> !stage.tensor<[B, 3*H*Dh], bf16>
// CHECK-NEXT: stage.slice %{{.*}} dim 1 offset 0 size H*Dh : !stage.tensor<[B, 3*H*Dh], bf16> -> !stage.tensor<[B, H*Dh], bf16>
// CHECK-NEXT: stage.slice %{{.*}} dim 1 offset H*Dh size H*Dh : !stage.tensor<[B, 3*H*Dh], bf16> -> !stage.tensor<[B, H*Dh], bf16>
// CHECK-NEXT: stage.slice %{{.*}} dim 1 offset 2*H*Dh size H*Dh : !stage.tensor<[B, 3*H*Dh], bf16> -> !stage.tensor<[B, H*Dh], bf16>
// CHECK-NEXT: stage.reshape %{{.*}} : !stage.tensor<[B, H*Dh], bf16> -> !stage.tensor<[B, H, Dh], bf16>

func.func @qkv() -> !stage.tensor<[8, 4, 16], bf16> {
  %x = stage.input "x" : !stage.tensor<[8, 64], bf16>
  %w = stage.param "qkv" {stage.dims = ["D", "3*H*Dh"]} : !stage.tensor<[64, 192], bf16>
  %y = stage.einsum "bd,dc->bc" %x, %w : (!stage.tensor<[8, 64], bf16>, !stage.tensor<[64, 192], bf16>) -> !stage.tensor<[8, 192], bf16>
  %q = stage.slice %y dim 1 offset 0 size 64 : !stage.tensor<[8, 192], bf16> -> !stage.tensor<[8, 64], bf16>
  %k = stage.slice %y dim 1 offset 64 size 64 : !stage.tensor<[8, 192], bf16> -> !stage.tensor<[8, 64], bf16>
  %v = stage.slice %y dim 1 offset 128 size 64 : !stage.tensor<[8, 192], bf16> -> !stage.tensor<[8, 64], bf16>
  %h = stage.reshape %q : !stage.tensor<[8, 64], bf16> -> !stage.tensor<[8, 4, 16], bf16>
  return %h : !stage.tensor<[8, 4, 16], bf16>
}
