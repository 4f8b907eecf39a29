// RUN: stage-opt %s --stage-autodiff --split-input-file | FileCheck %s

// A tied embedding: the table feeds the lookup and the LM head; its
// gradient is the sum of the head's weight gradient and the scatter-add of
// the lookup. The loss seeds its own gradient (no seed input remains).

// CHECK-LABEL: func.func @tied()
// CHECK:       %[[E:.*]] = stage.param "embed" : !stage.tensor<[V, D], bf16>
// CHECK:       backward {
// CHECK-NEXT:  ^bb0(%[[TOK:.*]]: !stage.tensor<[B, S], i32>, %[[LOG:.*]]: !stage.tensor<[B, S, V], bf16>, %[[X:.*]]: !stage.tensor<[B, S, D], bf16>):
// CHECK-NOT:     seed
// CHECK-NEXT:    %[[DL:.*]] = stage.cross_entropy_grad %[[LOG]], %[[TOK]] : (!stage.tensor<[B, S, V], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[B, S, V], bf16>
// CHECK-NEXT:    %[[DX:.*]] = stage.einsum "bsv,vd->bsd" %[[DL]], %[[E]]
// CHECK-NEXT:    %[[DE1:.*]] = stage.einsum "bsd,bsv->vd" %[[X]], %[[DL]]
// CHECK-NEXT:    %[[DE2:.*]] = stage.embedding_grad %[[DX]], %[[TOK]] : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[V, D], bf16>
// CHECK-NEXT:    %[[DE:.*]] = stage.ewise add %[[DE1]], %[[DE2]]
// CHECK-NEXT:    stage.yield %[[DE]]
func.func @tied(%tok: !stage.tensor<[B, S], i32>) -> !stage.tensor<[], f32> {
  %e = stage.param "embed" : !stage.tensor<[V, D], bf16>
  %x = stage.embedding %e, %tok : (!stage.tensor<[V, D], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[B, S, D], bf16>
  %l = stage.einsum "bsd,vd->bsv" %x, %e : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[V, D], bf16>) -> !stage.tensor<[B, S, V], bf16>
  %loss = stage.cross_entropy %l, %tok : (!stage.tensor<[B, S, V], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[], f32>
  return %loss : !stage.tensor<[], f32>
}

// -----

// Flash attention keeps q, k, v and its output; RoPE's gradient rotates
// back. k serves as key and value: its two gradients add up.

// CHECK-LABEL: func.func @attention()
// CHECK:       forward {
// CHECK:         %[[K:.*]] = stage.einsum "bsd,dhk->bshk" %{{.*}}, %{{.*}} : {{.*}} -> !stage.tensor<[B, S, KV, Dh], bf16>
// CHECK-NEXT:    %[[Q:.*]] = stage.rope
// CHECK-NEXT:    %[[O:.*]] = stage.attention %[[Q]], %[[K]], %[[K]] causal
// CHECK-NEXT:    stage.yield %[[O]], %[[K]], %[[Q]], %{{.*}}
// CHECK-NEXT:  } backward {
// CHECK-NEXT:  ^bb0(%[[KO:.*]]: !stage.tensor<[B, S, H, Dh], bf16>, %[[KK:.*]]: !stage.tensor<[B, S, KV, Dh], bf16>, %[[KQ:.*]]: !stage.tensor<[B, S, H, Dh], bf16>, %[[KX:.*]]: !stage.tensor<[B, S, D], bf16>):
// CHECK-NEXT:    %[[DO:.*]] = stage.input "seed.0"
// CHECK-NEXT:    %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = stage.attention_grad %[[KQ]], %[[KK]], %[[KK]], %[[KO]], %[[DO]] causal
// CHECK-NEXT:    %[[DKV:.*]] = stage.ewise add %[[DK]], %[[DV]]
// CHECK-NEXT:    %[[DQR:.*]] = stage.rope %[[DQ]] inverse
// CHECK-NEXT:    %[[DWK:.*]] = stage.einsum "bsd,bshk->dhk" %[[KX]], %[[DKV]]
// CHECK-NEXT:    %[[DWQ:.*]] = stage.einsum "bsd,bshk->dhk" %[[KX]], %[[DQR]]
// CHECK-NEXT:    stage.yield %[[DWQ]], %[[DWK]]
func.func @attention(%x: !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16> {
  %wq = stage.param "wq" : !stage.tensor<[D, H, Dh], bf16>
  %wk = stage.param "wk" : !stage.tensor<[D, KV, Dh], bf16>
  %q = stage.einsum "bsd,dhk->bshk" %x, %wq : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  %k = stage.einsum "bsd,dhk->bshk" %x, %wk : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, KV, Dh], bf16>) -> !stage.tensor<[B, S, KV, Dh], bf16>
  %qr = stage.rope %q : !stage.tensor<[B, S, H, Dh], bf16>
  %o = stage.attention %qr, %k, %k causal : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  return %o : !stage.tensor<[B, S, H, Dh], bf16>
}
