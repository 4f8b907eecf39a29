// RUN: stage-opt %s --stage-autodiff --split-input-file | FileCheck %s

// Routing: combine's gradient splits into the experts' and the gate
// weights'; the gate weights flow back through top-k to the router.

// CHECK-LABEL: func.func @moe()
// CHECK:       %[[WR:.*]] = stage.param "router"
// CHECK:       backward {
// CHECK-NEXT:  ^bb0(%[[IDS:.*]]: !stage.tensor<[B, S, K], i32>, %[[GW:.*]]: !stage.tensor<[B, S, K], bf16>, %[[Y:.*]]: !stage.tensor<[E, B*S*K/E, D], bf16>, %[[BUF:.*]]: !stage.tensor<[E, B*S*K/E, D], bf16>, %[[X:.*]]: !stage.tensor<[B, S, D], bf16>):
// CHECK-NEXT:    %[[DOUT:.*]] = stage.input "seed.0"
// CHECK-NEXT:    %[[DY:.*]], %[[DGW:.*]] = stage.combine_grad %[[DOUT]], %[[Y]], %[[GW]], %[[IDS]] : {{.*}} -> (!stage.tensor<[E, B*S*K/E, D], bf16>, !stage.tensor<[B, S, K], bf16>)
// CHECK-NEXT:    %[[DWE:.*]] = stage.einsum "ecd,ecf->edf" %[[BUF]], %[[DY]]
// CHECK-NEXT:    %[[DS:.*]] = stage.topk_grad %[[DGW]], %[[IDS]] : (!stage.tensor<[B, S, K], bf16>, !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[B, S, E], bf16>
// CHECK-NEXT:    %[[DWR:.*]] = stage.einsum "bsd,bse->de" %[[X]], %[[DS]]
// CHECK-NEXT:    stage.yield %[[DWR]], %[[DWE]]
func.func @moe(%x: !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16> {
  %wr = stage.param "router" : !stage.tensor<[D, E], bf16>
  %we = stage.param "experts" : !stage.tensor<[E, D, D], bf16>
  %logits = stage.einsum "bsd,de->bse" %x, %wr : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, E], bf16>) -> !stage.tensor<[B, S, E], bf16>
  %w, %ids = stage.topk %logits k K : !stage.tensor<[B, S, E], bf16> -> !stage.tensor<[B, S, K], bf16>, !stage.tensor<[B, S, K], i32>
  %buf = stage.dispatch %x, %ids : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[E, B*S*K/E, D], bf16>
  %y = stage.einsum "ecd,edf->ecf" %buf, %we : (!stage.tensor<[E, B*S*K/E, D], bf16>, !stage.tensor<[E, D, D], bf16>) -> !stage.tensor<[E, B*S*K/E, D], bf16>
  %out = stage.combine %y, %w, %ids : (!stage.tensor<[E, B*S*K/E, D], bf16>, !stage.tensor<[B, S, K], bf16>, !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[B, S, D], bf16>
  return %out : !stage.tensor<[B, S, D], bf16>
}

// -----

// The tokens get a gradient when they depend on a weight: dispatch_grad.
// CHECK-LABEL: func.func @dispatch()
// CHECK:       backward {
// CHECK:         %[[DB:.*]] = stage.einsum "ecf,edf->ecd"
// CHECK-NEXT:    stage.einsum "ecd,ecf->edf"
// CHECK-NEXT:    stage.dispatch_grad %[[DB]], %{{.*}} : (!stage.tensor<[E, B*S*K/E, D], bf16>, !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[B, S, D], bf16>
func.func @dispatch(%ids: !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[E, B*S*K/E, D], bf16> {
  %w = stage.param "w" : !stage.tensor<[B, S, D], bf16>
  %we = stage.param "experts" : !stage.tensor<[E, D, D], bf16>
  %buf = stage.dispatch %w, %ids : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[E, B*S*K/E, D], bf16>
  %y = stage.einsum "ecd,edf->ecf" %buf, %we : (!stage.tensor<[E, B*S*K/E, D], bf16>, !stage.tensor<[E, D, D], bf16>) -> !stage.tensor<[E, B*S*K/E, D], bf16>
  return %y : !stage.tensor<[E, B*S*K/E, D], bf16>
}

// -----

// Dropout keeps its one-byte mask, not its input.
// CHECK-LABEL: func.func @dropout()
// CHECK:       forward {
// CHECK-NEXT:    %{{.*}}, %[[MASK:.*]] = stage.dropout
// CHECK-NEXT:    stage.yield %[[MASK]] : !stage.tensor<[B, D], i8>
// CHECK-NEXT:  } backward {
// CHECK-NEXT:  ^bb0(%[[KM:.*]]: !stage.tensor<[B, D], i8>):
// CHECK-NEXT:    %[[DY:.*]] = stage.input "seed.0"
// CHECK-NEXT:    stage.ewise generic %[[DY]], %[[KM]] {flops_per_element = 1 : i64} : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], i8>) -> !stage.tensor<[B, D], bf16>
func.func @dropout() -> !stage.tensor<[B, D], bf16> {
  %w = stage.param "w" : !stage.tensor<[B, D], bf16>
  %y, %mask = stage.dropout %w : !stage.tensor<[B, D], bf16> -> !stage.tensor<[B, D], i8>
  return %y : !stage.tensor<[B, D], bf16>
}
