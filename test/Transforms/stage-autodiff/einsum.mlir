// RUN: stage-opt %s --stage-autodiff | FileCheck %s

// dA = dC . B and dB = A . dC, with the specs rearranged; the input x gets
// no gradient, so only h (for dW2) and x (for dW1) are kept.

// CHECK-LABEL: func.func @two_layers()
// CHECK:       %[[W1:.*]] = stage.param "w1" : !stage.tensor<[D, D], bf16>
// CHECK:       %[[W2:.*]] = stage.param "w2" : !stage.tensor<[D, F], bf16>
// CHECK:       stage.microbatches 1 -> (!stage.tensor<[D, D], bf16>, !stage.tensor<[D, F], bf16>) forward {
// CHECK-NEXT:    %[[X:.*]] = stage.input "arg0" : !stage.tensor<[B, D], bf16>
// CHECK-NEXT:    %[[H:.*]] = stage.einsum "bd,de->be" %[[X]], %[[W1]]
// CHECK-NEXT:    stage.einsum "be,ef->bf" %[[H]], %[[W2]]
// CHECK-NEXT:    stage.yield %[[H]], %[[X]] : !stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>
// CHECK-NEXT:  } backward {
// CHECK-NEXT:  ^bb0(%[[KH:.*]]: !stage.tensor<[B, D], bf16>, %[[KX:.*]]: !stage.tensor<[B, D], bf16>):
// CHECK-NEXT:    %[[DY:.*]] = stage.input "seed.0" : !stage.tensor<[B, F], bf16>
// CHECK-NEXT:    %[[DH:.*]] = stage.einsum "bf,ef->be" %[[DY]], %[[W2]] : (!stage.tensor<[B, F], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, D], bf16>
// CHECK-NEXT:    %[[DW2:.*]] = stage.einsum "be,bf->ef" %[[KH]], %[[DY]] : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, F], bf16>) -> !stage.tensor<[D, F], bf16>
// CHECK-NEXT:    %[[DW1:.*]] = stage.einsum "bd,be->de" %[[KX]], %[[DH]] : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[D, D], bf16>
// CHECK-NEXT:    stage.yield %[[DW1]], %[[DW2]]
// CHECK-NEXT:  }
func.func @two_layers(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, F], bf16> {
  %w1 = stage.param "w1" : !stage.tensor<[D, D], bf16>
  %w2 = stage.param "w2" : !stage.tensor<[D, F], bf16>
  %h = stage.einsum "bd,de->be" %x, %w1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
  %y = stage.einsum "be,ef->bf" %h, %w2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, F], bf16>
  return %y : !stage.tensor<[B, F], bf16>
}

// A multi-index contraction: the projections of attention.
// CHECK-LABEL: func.func @heads()
// CHECK:       backward {
// CHECK:         stage.einsum "bsd,bshk->dhk" %{{.*}}, %{{.*}} : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, H, Dh], bf16>) -> !stage.tensor<[D, H, Dh], bf16>
func.func @heads(%x: !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16> {
  %w = stage.param "wq" : !stage.tensor<[D, H, Dh], bf16>
  %q = stage.einsum "bsd,dhk->bshk" %x, %w : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  return %q : !stage.tensor<[B, S, H, Dh], bf16>
}
