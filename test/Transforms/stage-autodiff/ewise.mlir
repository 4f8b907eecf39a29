// RUN: stage-opt %s --stage-autodiff --split-input-file | FileCheck %s

// add, sub, mul, div; the bias was broadcast over B, so its gradient is
// summed over B. w is used three times: its gradients are added.

// CHECK-LABEL: func.func @binary()
// CHECK:       %[[W:.*]] = stage.param "w" : !stage.tensor<[B, F], bf16>
// CHECK:       forward {
// CHECK-NEXT:    %[[X:.*]] = stage.input "arg0"
// CHECK-NEXT:    %[[A:.*]] = stage.ewise add %[[W]], %{{.*}}
// CHECK-NEXT:    %[[S:.*]] = stage.ewise sub %[[A]], %[[X]]
// CHECK-NEXT:    %[[M:.*]] = stage.ewise mul %[[S]], %[[W]]
// CHECK-NEXT:    stage.ewise div %[[M]], %[[W]]
// CHECK-NEXT:    stage.yield %[[M]], %[[S]]
// CHECK-NEXT:  } backward {
// CHECK-NEXT:  ^bb0(%[[KM:.*]]: !stage.tensor<[B, F], bf16>, %[[KS:.*]]: !stage.tensor<[B, F], bf16>):
// CHECK-NEXT:    %[[DD:.*]] = stage.input "seed.0"
// CHECK-NEXT:    %[[DM:.*]] = stage.ewise div %[[DD]], %[[W]]
// CHECK-NEXT:    %[[DW1:.*]] = stage.ewise generic %[[DD]], %[[KM]], %[[W]] {flops_per_element = 3 : i64}
// CHECK-NEXT:    %[[DS:.*]] = stage.ewise mul %[[DM]], %[[W]]
// CHECK-NEXT:    %[[DW2:.*]] = stage.ewise mul %[[DM]], %[[KS]]
// CHECK-NEXT:    %[[DW12:.*]] = stage.ewise add %[[DW1]], %[[DW2]]
// CHECK-NEXT:    %[[DW:.*]] = stage.ewise add %[[DW12]], %[[DS]]
// CHECK-NEXT:    %[[DB:.*]] = stage.reduce sum %[[DS]] dims [0] : !stage.tensor<[B, F], bf16> -> !stage.tensor<[F], bf16>
// CHECK-NEXT:    stage.yield %[[DW]], %[[DB]]
func.func @binary(%x: !stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16> {
  %w = stage.param "w" : !stage.tensor<[B, F], bf16>
  %b = stage.param "b" : !stage.tensor<[F], bf16>
  %a = stage.ewise add %w, %b : (!stage.tensor<[B, F], bf16>, !stage.tensor<[F], bf16>) -> !stage.tensor<[B, F], bf16>
  %s = stage.ewise sub %a, %x : (!stage.tensor<[B, F], bf16>, !stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
  %m = stage.ewise mul %s, %w : (!stage.tensor<[B, F], bf16>, !stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
  %d = stage.ewise div %m, %w : (!stage.tensor<[B, F], bf16>, !stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
  return %d : !stage.tensor<[B, F], bf16>
}

// -----

// Activations: silu and gelu keep their input, exp, tanh and sigmoid their
// output; neg and cast keep nothing.
// CHECK-LABEL: func.func @unary()
// CHECK:       forward {
// CHECK-NEXT:    %[[SI:.*]] = stage.ewise silu %[[W:.*]] :
// CHECK-NEXT:    %[[GE:.*]] = stage.ewise gelu %[[SI]]
// CHECK-NEXT:    %[[EX:.*]] = stage.ewise exp %[[GE]]
// CHECK-NEXT:    %[[TA:.*]] = stage.ewise tanh %[[EX]]
// CHECK-NEXT:    %[[SG:.*]] = stage.ewise sigmoid %[[TA]]
// CHECK-NEXT:    %[[NE:.*]] = stage.ewise neg %[[SG]]
// CHECK-NEXT:    stage.ewise cast %[[NE]] {stage.output} : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], f32>
// CHECK-NEXT:    stage.yield %[[SG]], %[[TA]], %[[EX]], %[[SI]]
// CHECK-NEXT:  } backward {
// CHECK-NEXT:  ^bb0(%[[KSG:.*]]: !stage.tensor<[B, F], bf16>, %[[KTA:.*]]: !stage.tensor<[B, F], bf16>, %[[KEX:.*]]: !stage.tensor<[B, F], bf16>, %[[KSI:.*]]: !stage.tensor<[B, F], bf16>):
// CHECK-NEXT:    %[[D0:.*]] = stage.input "seed.0" : !stage.tensor<[B, F], f32>
// CHECK-NEXT:    %[[D1:.*]] = stage.ewise cast %[[D0]] : (!stage.tensor<[B, F], f32>) -> !stage.tensor<[B, F], bf16>
// CHECK-NEXT:    %[[D2:.*]] = stage.ewise neg %[[D1]]
// CHECK-NEXT:    %[[D3:.*]] = stage.ewise sigmoid_grad %[[KSG]], %[[D2]]
// CHECK-NEXT:    %[[D4:.*]] = stage.ewise tanh_grad %[[KTA]], %[[D3]]
// CHECK-NEXT:    %[[D5:.*]] = stage.ewise mul %[[D4]], %[[KEX]]
// CHECK-NEXT:    %[[D6:.*]] = stage.ewise gelu_grad %[[KSI]], %[[D5]]
// CHECK-NEXT:    %[[D7:.*]] = stage.ewise silu_grad %[[W]], %[[D6]]
// CHECK-NEXT:    stage.yield %[[D7]]
func.func @unary() -> !stage.tensor<[B, F], f32> {
  %w = stage.param "w" : !stage.tensor<[B, F], bf16>
  %a = stage.ewise silu %w : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
  %b = stage.ewise gelu %a : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
  %c = stage.ewise exp %b : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
  %d = stage.ewise tanh %c : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
  %e = stage.ewise sigmoid %d : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
  %f = stage.ewise neg %e : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
  %g = stage.ewise cast %f : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], f32>
  return %g : !stage.tensor<[B, F], f32>
}

// -----

// The rest of the elementwise kinds.
// CHECK-LABEL: func.func @more()
// CHECK:       backward {
// CHECK:         stage.ewise generic %{{.*}}, %{{.*}} {flops_per_element = 3 : i64}
// CHECK:         stage.ewise generic %{{.*}}, %{{.*}} {flops_per_element = 2 : i64}
// CHECK:         stage.ewise div %{{.*}}, %{{.*}}
// CHECK:         stage.ewise relu_grad
// CHECK:         stage.ewise generic %{{.*}}, %{{.*}} {flops_per_element = 2 : i64}
// CHECK:         stage.ewise generic %{{.*}}, %{{.*}}, %{{.*}} {flops_per_element = 1 : i64}
func.func @more() -> !stage.tensor<[F], bf16> {
  %w = stage.param "w" : !stage.tensor<[F], bf16>
  %v = stage.param "v" : !stage.tensor<[F], bf16>
  %m = stage.ewise max %w, %v : (!stage.tensor<[F], bf16>, !stage.tensor<[F], bf16>) -> !stage.tensor<[F], bf16>
  %s = stage.ewise square %m : (!stage.tensor<[F], bf16>) -> !stage.tensor<[F], bf16>
  %r = stage.ewise relu %s : (!stage.tensor<[F], bf16>) -> !stage.tensor<[F], bf16>
  %l = stage.ewise log %r : (!stage.tensor<[F], bf16>) -> !stage.tensor<[F], bf16>
  %q = stage.ewise sqrt %l : (!stage.tensor<[F], bf16>) -> !stage.tensor<[F], bf16>
  %i = stage.ewise reciprocal %q : (!stage.tensor<[F], bf16>) -> !stage.tensor<[F], bf16>
  return %i : !stage.tensor<[F], bf16>
}
