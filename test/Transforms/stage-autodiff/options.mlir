// RUN: stage-opt %s --stage-autodiff="micro-batches=4" | FileCheck %s --check-prefix=MIXED
// RUN: stage-opt %s --stage-autodiff="optimizer=sgd" | FileCheck %s --check-prefix=SGD
// RUN: stage-opt %s --stage-autodiff="optimizer=adam precision=fp32" | FileCheck %s --check-prefix=FP32

// Micro-batches: the step holds B/M sequences per micro-batch, M is bound.
// Mixed precision: bf16 weights and gradients, fp32 master and moments.
// MIXED:      stage.bindings = {B = 8 : i64, M = 4 : i64}
// MIXED:      %[[W:.*]] = stage.param "w" group "mlp" : !stage.tensor<[D, F], bf16>
// MIXED-NEXT: %[[MA:.*]] = stage.param "w" kind "master" group "mlp" : !stage.tensor<[D, F], f32>
// MIXED-NEXT: %[[M1:.*]] = stage.param "w" kind "exp_avg" group "mlp" : !stage.tensor<[D, F], f32>
// MIXED-NEXT: %[[M2:.*]] = stage.param "w" kind "exp_avg_sq" group "mlp" : !stage.tensor<[D, F], f32>
// MIXED-NEXT: %[[G:.*]] = stage.microbatches M -> (!stage.tensor<[D, F], bf16>) forward {
// MIXED-NEXT:   stage.input "arg0" : !stage.tensor<[B/M, D], bf16>
// MIXED:      stage.optimizer_step adamw %[[W]], %[[G]] master %[[MA]] moments %[[M1]], %[[M2]]
// MIXED-NEXT: return

// SGD keeps no moments.
// SGD:       %[[W:.*]] = stage.param "w" group "mlp" : !stage.tensor<[D, F], bf16>
// SGD-NEXT:  %[[MA:.*]] = stage.param "w" kind "master" group "mlp" : !stage.tensor<[D, F], f32>
// SGD-NEXT:  %[[G:.*]] = stage.microbatches 1
// SGD:       stage.optimizer_step sgd %[[W]], %[[G]] master %[[MA]] : !stage.tensor<[D, F], bf16>, !stage.tensor<[D, F], bf16>, !stage.tensor<[D, F], f32>

// fp32 training: everything in fp32, no master copy.
// FP32:      %[[W:.*]] = stage.param "w" group "mlp" : !stage.tensor<[D, F], f32>
// FP32-NEXT: stage.param "w" kind "exp_avg" group "mlp" : !stage.tensor<[D, F], f32>
// FP32:      stage.input "arg0" : !stage.tensor<[B, D], f32>
// FP32:      stage.optimizer_step adam %[[W]], %{{.*}} moments
// FP32-NOT:  master

module attributes {stage.bindings = {B = 8}} {
  func.func @f(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, F], bf16> {
    %w = stage.param "w" group "mlp" : !stage.tensor<[D, F], bf16>
    %y = stage.einsum "bd,df->bf" %x, %w : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, F], bf16>
    return %y : !stage.tensor<[B, F], bf16>
  }
}
