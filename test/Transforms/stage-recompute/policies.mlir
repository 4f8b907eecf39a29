// RUN: stage-opt %s --stage-recompute=policy=selective | FileCheck %s --check-prefix=MARK
// RUN: stage-opt %s --stage-recompute=policy=selective --stage-autodiff | FileCheck %s --check-prefix=SEL
// RUN: stage-opt %s --stage-recompute=policy=full --stage-autodiff | FileCheck %s --check-prefix=FULL
// RUN: stage-opt %s --stage-recompute=policy=none --stage-autodiff | FileCheck %s --check-prefix=NONE

// MARK: stage.attention {{.*}} causal {stage.recomputable, stage.recompute_keeps_result}
// MARK-NOT: stage.recomputable

// Selective: the backward re-runs the attention from the kept q, k, v (its
// FLOPs are the recomputation); its output is stored all the same, as the
// output projection's input (Megatron-LM's checkpoint stores a region's
// outputs), and the gradients read the stored copy.
// SEL:       forward {
// SEL:         %[[N:.*]] = stage.norm rms %[[A:[^ ]*]] weight
// SEL-NEXT:    stage.einsum
// SEL-NEXT:    %[[K:.*]] = stage.einsum
// SEL-NEXT:    %[[Q:.*]] = stage.rope
// SEL-NEXT:    %[[O:.*]] = stage.attention %[[Q]], %[[K]], %[[K]] causal {stage.recomputable, stage.recompute_keeps_result}
// SEL-NEXT:    stage.einsum
// SEL-NEXT:    %[[R:.*]] = stage.ewise add
// SEL-NEXT:    stage.yield %[[R]], %[[Q]], %[[K]], %[[O]], %[[N]], %[[A]] :
// SEL:       } backward {
// SEL:         stage.repeat reverse L
// SEL-NEXT:      %[[RO:.*]] = stage.attention %[[KQ:[^,]*]], %[[KK:[^,]*]], %[[KK]] causal {stage.recompute}
// SEL-NEXT:      stage.einsum "bsd,hkd->bshk"
// SEL-NEXT:      stage.einsum "bshk,bsd->hkd" %[[KO:[^,]*]],
// SEL-NEXT:      stage.attention_grad %[[KQ]], %[[KK]], %[[KK]], %[[KO]], {{.*}} causal
// SEL-NOT:       %[[RO]]

// Full: only the layer input is kept per layer; the layer's forward runs
// again, in order, at the start of its backward.
// FULL:      stage.repeat L carry(%[[X:[^ ]*]] = {{.*}} -> stack(!stage.tensor<[L, B, S, D], bf16>) attributes {stage.output} {
// FULL:        stage.yield %{{.*}}, %[[X]] :
// FULL:      } backward {
// FULL:        stage.repeat reverse L carry({{.*}}) slice({{.*}}) -> stack
// FULL-NEXT:     stage.norm rms {{.*}} {stage.recompute}
// FULL-NEXT:     stage.einsum "bsd,dhk->bshk" {{.*}} {stage.recompute}
// FULL-NEXT:     stage.einsum "bsd,dhk->bshk" {{.*}} {stage.recompute}
// FULL-NEXT:     stage.rope {{.*}} {stage.recompute}
// FULL-NEXT:     stage.attention {{.*}} causal {stage.recompute}
// FULL-NEXT:     stage.einsum "bshk,hkd->bsd" {{.*}} {stage.recompute}
// FULL-NEXT:     stage.ewise add {{.*}} {stage.recompute}
// FULL-NEXT:     stage.einsum "bsd,hkd->bshk"

// NONE-NOT: stage.recompute

func.func @layer(%x: !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16> {
  %g = stage.param "g" : !stage.tensor<[L, D], bf16>
  %wq = stage.param "wq" : !stage.tensor<[L, D, H, Dh], bf16>
  %wk = stage.param "wk" : !stage.tensor<[L, D, H, Dh], bf16>
  %wo = stage.param "wo" : !stage.tensor<[L, H, Dh, D], bf16>
  %h = stage.repeat L carry(%a = %x : !stage.tensor<[B, S, D], bf16>) slice(%gi = %g : !stage.tensor<[L, D], bf16>, %q_w = %wq : !stage.tensor<[L, D, H, Dh], bf16>, %k_w = %wk : !stage.tensor<[L, D, H, Dh], bf16>, %o_w = %wo : !stage.tensor<[L, H, Dh, D], bf16>) {
    %n = stage.norm rms %a weight %gi : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    %q = stage.einsum "bsd,dhk->bshk" %n, %q_w : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
    %k = stage.einsum "bsd,dhk->bshk" %n, %k_w : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
    %qr = stage.rope %q : !stage.tensor<[B, S, H, Dh], bf16>
    %o = stage.attention %qr, %k, %k causal : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
    %y = stage.einsum "bshk,hkd->bsd" %o, %o_w : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[H, Dh, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    %r = stage.ewise add %a, %y : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    stage.yield %r : !stage.tensor<[B, S, D], bf16>
  }
  return %h : !stage.tensor<[B, S, D], bf16>
}
