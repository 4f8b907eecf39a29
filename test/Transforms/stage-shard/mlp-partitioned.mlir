// RUN: stage-opt %s --stage-autodiff --stage-shard="tp=2 dp=2" --stage-partition | FileCheck %s

// The same MLP partitioned: local types, one all-reduce over tp after the
// row-parallel layer forward (its output, which the rest of the model reads,
// is needed whole; the input gets no gradient, so the backward has none),
// and one all-reduce over dp per weight gradient before its optimizer step.

// CHECK:      %[[W1:.*]] = stage.param "w1" group "mlp" : !stage.tensor<[D, F/tp], bf16>
// CHECK:      %[[W2:.*]] = stage.param "w2" group "mlp" : !stage.tensor<[F/tp, D], bf16>
// CHECK:      %[[G:.*]]:2 = stage.microbatches 1 -> (!stage.tensor<[D, F/tp], bf16>, !stage.tensor<[F/tp, D], bf16>) forward {
// CHECK-NEXT:   %[[X:.*]] = stage.input "arg0" : !stage.tensor<[B/dp, D], bf16>
// CHECK-NEXT:   %[[H:.*]] = stage.einsum "bd,df->bf" %[[X]], %[[W1]] : (!stage.tensor<[B/dp, D], bf16>, !stage.tensor<[D, F/tp], bf16>) -> !stage.tensor<[B/dp, F/tp], bf16>
// CHECK-NEXT:   %[[A:.*]] = stage.ewise gelu %[[H]]
// CHECK-NEXT:   %[[Y:.*]] = stage.einsum "bf,fd->bd" %[[A]], %[[W2]] {stage.output} : (!stage.tensor<[B/dp, F/tp], bf16>, !stage.tensor<[F/tp, D], bf16>) -> !stage.tensor<[B/dp, D], bf16>
// CHECK-NEXT:   stage.all_reduce %[[Y]] on @grid [tp] : !stage.tensor<[B/dp, D], bf16>
// CHECK-NEXT:   stage.yield
// CHECK-NEXT: } backward {
// CHECK-NEXT: ^bb0(%[[KA:.*]]: !stage.tensor<[B/dp, F/tp], bf16>, %[[KH:.*]]: !stage.tensor<[B/dp, F/tp], bf16>, %[[KX:.*]]: !stage.tensor<[B/dp, D], bf16>):
// CHECK-NEXT:   %[[DY:.*]] = stage.input "seed.0" : !stage.tensor<[B/dp, D], bf16>
// CHECK-NEXT:   %[[DA:.*]] = stage.einsum "bd,fd->bf" %[[DY]], %[[W2]]
// CHECK-NEXT:   %[[DW2:.*]] = stage.einsum "bf,bd->fd" %[[KA]], %[[DY]] : (!stage.tensor<[B/dp, F/tp], bf16>, !stage.tensor<[B/dp, D], bf16>) -> !stage.tensor<[F/tp, D], bf16>
// CHECK-NEXT:   %[[DH:.*]] = stage.ewise gelu_grad %[[KH]], %[[DA]]
// CHECK-NEXT:   %[[DW1:.*]] = stage.einsum "bd,bf->df" %[[KX]], %[[DH]]
// CHECK-NEXT:   stage.yield %[[DW1]], %[[DW2]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[R1:.*]] = stage.all_reduce %[[G]]#0 on @grid [dp] : !stage.tensor<[D, F/tp], bf16>
// CHECK-NEXT: stage.optimizer_step adamw %[[W1]], %[[R1]]
// CHECK-NEXT: %[[R2:.*]] = stage.all_reduce %[[G]]#1 on @grid [dp] : !stage.tensor<[F/tp, D], bf16>
// CHECK-NEXT: stage.optimizer_step adamw %[[W2]], %[[R2]]
// CHECK-NEXT: return
module attributes {stage.bindings = {B = 8, D = 64, F = 256}} {
  func.func @mlp(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16> {
    %w1 = stage.param "w1" group "mlp" : !stage.tensor<[D, F], bf16>
    %w2 = stage.param "w2" group "mlp" : !stage.tensor<[F, D], bf16>
    %h = stage.einsum "bd,df->bf" %x, %w1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, F], bf16>
    %a = stage.ewise gelu %h : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
    %y = stage.einsum "bf,fd->bd" %a, %w2 : (!stage.tensor<[B, F], bf16>, !stage.tensor<[F, D], bf16>) -> !stage.tensor<[B, D], bf16>
    return %y : !stage.tensor<[B, D], bf16>
  }
}
