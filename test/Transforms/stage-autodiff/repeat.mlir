// RUN: stage-opt %s --stage-autodiff=micro-batches=2 | FileCheck %s

// A stack of L layers: the forward repeat keeps, per layer, what the layer's
// backward needs as stacked results; the backward is one reverse repeat over
// those stacks and the weight stacks, yielding stacked weight gradients. The
// IR stays one layer long.

// CHECK-LABEL: func.func @stack()
// CHECK:       %[[W1:.*]] = stage.param "w1" : !stage.tensor<[L, D, F], bf16>
// CHECK:       %[[W2:.*]] = stage.param "w2" : !stage.tensor<[L, F, D], bf16>
// CHECK:       stage.microbatches M -> (!stage.tensor<[L, D, F], bf16>, !stage.tensor<[L, F, D], bf16>) forward {
// CHECK-NEXT:    %[[X:.*]] = stage.input "arg0" : !stage.tensor<[B/M, S, D], bf16>
// CHECK-NEXT:    %[[R:.*]]:4 = stage.repeat L carry(%[[A:.*]] = %[[X]] : !stage.tensor<[B/M, S, D], bf16>) slice(%[[U:.*]] = %[[W1]] : !stage.tensor<[L, D, F], bf16>, %[[D:.*]] = %[[W2]] : !stage.tensor<[L, F, D], bf16>) -> stack(!stage.tensor<[L, B/M, S, F], bf16>, !stage.tensor<[L, B/M, S, F], bf16>, !stage.tensor<[L, B/M, S, D], bf16>) attributes {stage.output} {
// CHECK-NEXT:      %[[Y:.*]] = stage.einsum "bsd,df->bsf" %[[A]], %[[U]]
// CHECK-NEXT:      %[[G:.*]] = stage.ewise gelu %[[Y]]
// CHECK-NEXT:      %[[Z:.*]] = stage.einsum "bsf,fd->bsd" %[[G]], %[[D]]
// CHECK-NEXT:      stage.yield %[[Z]], %[[G]], %[[Y]], %[[A]]
// CHECK-NEXT:    }
// CHECK-NEXT:    stage.yield %[[R]]#1, %[[R]]#2, %[[R]]#3
// CHECK-NEXT:  } backward {
// CHECK-NEXT:  ^bb0(%[[KG:.*]]: !stage.tensor<[L, B/M, S, F], bf16>, %[[KY:.*]]: !stage.tensor<[L, B/M, S, F], bf16>, %[[KA:.*]]: !stage.tensor<[L, B/M, S, D], bf16>):
// CHECK-NEXT:    %[[DZ:.*]] = stage.input "seed.0" : !stage.tensor<[B/M, S, D], bf16>
// CHECK-NEXT:    %[[B:.*]]:3 = stage.repeat reverse L carry(%[[DA:.*]] = %[[DZ]] : !stage.tensor<[B/M, S, D], bf16>) slice(%[[SD:.*]] = %[[W2]] : !stage.tensor<[L, F, D], bf16>, %[[SG:.*]] = %[[KG]] : {{.*}}, %[[SY:.*]] = %[[KY]] : {{.*}}, %[[SU:.*]] = %[[W1]] : {{.*}}, %[[SA:.*]] = %[[KA]] : {{.*}}) -> stack(!stage.tensor<[L, D, F], bf16>, !stage.tensor<[L, F, D], bf16>) {
// CHECK-NEXT:      %[[DG:.*]] = stage.einsum "bsd,fd->bsf" %[[DA]], %[[SD]]
// CHECK-NEXT:      %[[DW2:.*]] = stage.einsum "bsf,bsd->fd" %[[SG]], %[[DA]]
// CHECK-NEXT:      %[[DY:.*]] = stage.ewise gelu_grad %[[SY]], %[[DG]]
// CHECK-NEXT:      %[[DX:.*]] = stage.einsum "bsf,df->bsd" %[[DY]], %[[SU]]
// CHECK-NEXT:      %[[DW1:.*]] = stage.einsum "bsd,bsf->df" %[[SA]], %[[DY]]
// CHECK-NEXT:      stage.yield %[[DX]], %[[DW1]], %[[DW2]]
// CHECK-NEXT:    }
// CHECK-NEXT:    stage.yield %[[B]]#1, %[[B]]#2
// CHECK-NEXT:  }
func.func @stack(%x: !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16> {
  %w1 = stage.param "w1" : !stage.tensor<[L, D, F], bf16>
  %w2 = stage.param "w2" : !stage.tensor<[L, F, D], bf16>
  %h = stage.repeat L carry(%a = %x : !stage.tensor<[B, S, D], bf16>) slice(%u = %w1 : !stage.tensor<[L, D, F], bf16>, %d = %w2 : !stage.tensor<[L, F, D], bf16>) {
    %y = stage.einsum "bsd,df->bsf" %a, %u : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, S, F], bf16>
    %g = stage.ewise gelu %y : (!stage.tensor<[B, S, F], bf16>) -> !stage.tensor<[B, S, F], bf16>
    %z = stage.einsum "bsf,fd->bsd" %g, %d : (!stage.tensor<[B, S, F], bf16>, !stage.tensor<[F, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    stage.yield %z : !stage.tensor<[B, S, D], bf16>
  }
  return %h : !stage.tensor<[B, S, D], bf16>
}

// Two stacks in sequence (as DeepSeek's dense then MoE layers) and a value
// captured from outside the body: the positions, kept at the top level.
// CHECK-LABEL: func.func @two_stacks()
// CHECK:       forward {
// CHECK:         %[[P:.*]] = stage.input "positions" : !stage.tensor<[S, D], bf16>
// CHECK:         stage.repeat Ld carry
// CHECK:         stage.repeat L - Ld carry
// CHECK:       } backward {
// CHECK:         stage.repeat reverse L - Ld carry
// CHECK:         stage.repeat reverse Ld carry
// CHECK:           stage.ewise mul %{{.*}}, %[[KP:.*]] :
func.func @two_stacks(%x: !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16> {
  %p = stage.input "positions" : !stage.tensor<[S, D], bf16>
  %w1 = stage.param "w1" : !stage.tensor<[Ld, D, D], bf16>
  %w2 = stage.param "w2" : !stage.tensor<[L - Ld, D, D], bf16>
  %h = stage.repeat Ld carry(%a = %x : !stage.tensor<[B, S, D], bf16>) slice(%u = %w1 : !stage.tensor<[Ld, D, D], bf16>) {
    %m = stage.ewise mul %a, %p : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[S, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    %y = stage.einsum "bsd,de->bse" %m, %u : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    stage.yield %y : !stage.tensor<[B, S, D], bf16>
  }
  %g = stage.repeat L - Ld carry(%a = %h : !stage.tensor<[B, S, D], bf16>) slice(%u = %w2 : !stage.tensor<[L - Ld, D, D], bf16>) {
    %y = stage.einsum "bsd,de->bse" %a, %u : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    stage.yield %y : !stage.tensor<[B, S, D], bf16>
  }
  return %g : !stage.tensor<[B, S, D], bf16>
}
