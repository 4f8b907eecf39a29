// RUN: stage-opt %s --stage-autodiff --split-input-file | FileCheck %s

// Norms keep their input; the weight and bias gradients come from the same
// norm_grad op. softmax keeps its output; reductions broadcast back.

// CHECK-LABEL: func.func @norms()
// CHECK:       %[[G:.*]] = stage.param "g"
// CHECK:       forward {
// CHECK:         %[[H:.*]] = stage.einsum
// CHECK-NEXT:    %[[N:.*]] = stage.norm layer %[[H]] weight %[[G]] bias
// CHECK-NEXT:    stage.norm rms %[[N]] {stage.output} :
// CHECK-NEXT:    stage.yield %[[N]], %[[H]], %{{.*}}
// CHECK-NEXT:  } backward {
// CHECK-NEXT:  ^bb0(%[[KN:.*]]: !stage.tensor<[B, D], bf16>, %[[KH:.*]]: !stage.tensor<[B, D], bf16>, %[[KX:.*]]: !stage.tensor<[B, D], bf16>):
// CHECK-NEXT:    %[[DR:.*]] = stage.input "seed.0"
// CHECK-NEXT:    %[[DN:.*]] = stage.norm_grad rms %[[KN]], %[[DR]] : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
// CHECK-NEXT:    %[[DH:.*]], %[[DP:.*]]:2 = stage.norm_grad layer %[[KH]], %[[DN]] weight %[[G]] with_bias : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>, !stage.tensor<[D], bf16>) -> (!stage.tensor<[B, D], bf16>, !stage.tensor<[D], bf16>, !stage.tensor<[D], bf16>)
// CHECK-NEXT:    %[[DW:.*]] = stage.einsum "bd,be->de" %[[KX]], %[[DH]]
// CHECK-NEXT:    stage.yield %[[DP]]#0, %[[DP]]#1, %[[DW]]
func.func @norms(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16> {
  %g = stage.param "g" : !stage.tensor<[D], bf16>
  %b = stage.param "b" : !stage.tensor<[D], bf16>
  %w = stage.param "w" : !stage.tensor<[D, D], bf16>
  %h = stage.einsum "bd,de->be" %x, %w : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
  %n = stage.norm layer %h weight %g bias %b : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, D], bf16>
  %r = stage.norm rms %n : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
  return %r : !stage.tensor<[B, D], bf16>
}

// -----

// CHECK-LABEL: func.func @reductions()
// CHECK:       forward {
// CHECK-NEXT:    %[[P:.*]] = stage.softmax %{{.*}} dim 2
// CHECK-NEXT:    stage.reduce sum %[[P]] dims [1]
// CHECK-NEXT:    stage.reduce mean
// CHECK-NEXT:    stage.yield %[[P]] : !stage.tensor<[B, S, D], bf16>
// CHECK-NEXT:  } backward {
// CHECK-NEXT:  ^bb0(%[[KP:.*]]: !stage.tensor<[B, S, D], bf16>):
// CHECK-NEXT:    %[[D0:.*]] = stage.input "seed.0" : !stage.tensor<[B], bf16>
// CHECK-NEXT:    %[[D1:.*]] = stage.broadcast %[[D0]] dims [1] : !stage.tensor<[B], bf16> -> !stage.tensor<[B, D], bf16>
// CHECK-NEXT:    %[[D2:.*]] = stage.ewise generic %[[D1]] {flops_per_element = 1 : i64}
// CHECK-NEXT:    %[[D3:.*]] = stage.broadcast %[[D2]] dims [1] : !stage.tensor<[B, D], bf16> -> !stage.tensor<[B, S, D], bf16>
// CHECK-NEXT:    %[[D4:.*]] = stage.softmax_grad %[[KP]], %[[D3]] dim 2 : !stage.tensor<[B, S, D], bf16>
// CHECK-NEXT:    stage.yield %[[D4]]
func.func @reductions() -> !stage.tensor<[B], bf16> {
  %w = stage.param "w" : !stage.tensor<[B, S, D], bf16>
  %p = stage.softmax %w dim 2 : !stage.tensor<[B, S, D], bf16>
  %r = stage.reduce sum %p dims [1] : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, D], bf16>
  %m = stage.reduce mean %r dims [1] : !stage.tensor<[B, D], bf16> -> !stage.tensor<[B], bf16>
  return %m : !stage.tensor<[B], bf16>
}
