// RUN: stage-opt %s --stage-autodiff --test-stage-sharding-rules -o /dev/null 2>&1 | FileCheck %s
// RUN: stage-opt %s --stage-autodiff --test-stage-sharding-rules=replicate-kv -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPL

// The sharding rule (ShardingRuleOpInterface) of every op stage-shard
// splits by rule, forward and backward: the factors of each operand and
// result, and which factors are summable (a split leaves a partial sum in
// the results without them), frozen (never split) or kept split.

// Contractions: every index may be split; those a result lacks are summed.
// CHECK-DAG: remark: stage.einsum ([0, 1, 2], [2, 3, 4]) -> ([0, 1, 3, 4]) summable {0, 1, 2, 3, 4} linear
// CHECK-DAG: remark: stage.einsum ([0, 1, 2], [0, 1, 3, 4]) -> ([2, 3, 4]) summable {0, 1, 2, 3, 4} linear
// Elementwise ops share one index space; adds pass partial sums through.
// CHECK-DAG: remark: stage.ewise ([0, 1, 2, 3]) -> ([0, 1, 2, 3])
// CHECK-DAG: remark: stage.ewise ([0, 1, 2], [0, 1, 2]) -> ([0, 1, 2]) linear
// CHECK-DAG: remark: stage.dropout ([0, 1, 2]) -> ([0, 1, 2], [0, 1, 2])
// A norm, a softmax and a rotation keep the dimension they work along whole.
// CHECK-DAG: remark: stage.norm ([0, 1, 2], [2]) -> ([0, 1, 2]) frozen {2}
// CHECK-DAG: remark: stage.norm_grad ([0, 1, 2], [0, 1, 2], [2]) -> ([0, 1, 2], [2]) summable {0, 1, 2} frozen {2}
// CHECK-DAG: remark: stage.softmax ([0, 1, 2]) -> ([0, 1, 2]) frozen {2}
// CHECK-DAG: remark: stage.softmax_grad ([0, 1, 2], [0, 1, 2]) -> ([0, 1, 2]) frozen {2}
// CHECK-DAG: remark: stage.rope ([0, 1, 2, 3]) -> ([0, 1, 2, 3]) frozen {3}
// The vocabulary-parallel lookup and loss: a split vocabulary sums.
// CHECK-DAG: remark: stage.embedding ([2, 3], [0, 1]) -> ([0, 1, 3]) summable {2} frozen {3}
// CHECK-DAG: remark: stage.embedding_grad ([0, 1, 3], [0, 1]) -> ([2, 3]) summable {0, 1} frozen {3}
// CHECK-DAG: remark: stage.cross_entropy ([0, 1, 2], [0, 1]) -> ([]) summable {0, 1, 2}
// CHECK-DAG: remark: stage.cross_entropy_grad ([0, 1, 2], [0, 1]) -> ([0, 1, 2])
// Attention: q [b, s, h, d], k and v [b, t, g, .]; the key sequence and the
// head dimensions stay whole, split queries stay split, and the key and
// value gradients sum over the queries.
// CHECK-DAG: remark: stage.attention ([0, 1, 2, 3], [0, 4, 2, 3], [0, 4, 2, 5]) -> ([0, 1, 2, 5]) frozen {3, 4, 5} keep-split {0, 1, 2}
// CHECK-DAG: remark: stage.attention_grad ([0, 1, 2, 3], [0, 4, 2, 3], [0, 4, 2, 5], [0, 1, 2, 5], [0, 1, 2, 5]) -> ([0, 1, 2, 3], [0, 4, 2, 3], [0, 4, 2, 5]) summable {0, 1} frozen {3, 4, 5} keep-split {0, 1, 2}
// Replicated kv heads have a head factor of their own, which stays whole;
// their gradients sum over the query heads too.
// REPL-DAG: remark: stage.attention ([0, 1, 2, 3], [0, 4, 6, 3], [0, 4, 6, 5]) -> ([0, 1, 2, 5]) frozen {3, 4, 5, 6} keep-split {0, 1, 2}
// REPL-DAG: remark: stage.attention_grad ([0, 1, 2, 3], [0, 4, 6, 3], [0, 4, 6, 5], [0, 1, 2, 5], [0, 1, 2, 5]) -> ([0, 1, 2, 3], [0, 4, 6, 3], [0, 4, 6, 5]) summable {0, 1, 2} frozen {3, 4, 5, 6} keep-split {0, 1, 2}
// Data movement: a reshape keeps a merged group's leading factor; a slice,
// pad or concat keeps its own dimension whole.
// CHECK-DAG: remark: stage.reshape ([0, 1, 2, 3]) -> ([0, 1, 2]) frozen {3} linear
// CHECK-DAG: remark: stage.reshape ([0, 1, 2]) -> ([0, 1, 2, 3]) frozen {3} linear
// CHECK-DAG: remark: stage.transpose ([0, 1, 2, 3]) -> ([0, 2, 1, 3]) linear
// CHECK-DAG: remark: stage.slice ([0, 1, 2, 3]) -> ([0, 1, 2, 3]) frozen {3} linear
// CHECK-DAG: remark: stage.pad ([0, 1, 2, 3]) -> ([0, 1, 2, 3]) frozen {3} linear
// CHECK-DAG: remark: stage.concat ([0, 1, 2, 3], [0, 1, 2, 3]) -> ([0, 1, 2, 3]) frozen {3} linear
// CHECK-DAG: remark: stage.broadcast ([0, 1]) -> ([0, 1, 2]) linear
// CHECK-DAG: remark: stage.reduce ([0, 1, 2]) -> ([0, 1]) summable {2} linear
// The router's top-k: the experts' scores stay whole.
// CHECK-DAG: remark: stage.topk ([0, 1, 2]) -> ([0, 1, 3], [0, 1, 3]) frozen {2, 3}
// CHECK-DAG: remark: stage.topk_grad ([0, 1, 3], [0, 1, 3]) -> ([0, 1, 2]) frozen {2, 3}

module attributes {stage.bindings = {B = 2, S = 4, D = 8, H = 2, KV = 1, Dh = 4, V = 16, E = 4, K = 2, F = 8}} {
func.func @f() -> !stage.tensor<[], f32> {
  %tok = stage.input "tokens" : !stage.tensor<[B, S], i32>
  %emb = stage.param "embed" : !stage.tensor<[V, D], bf16>
  %x = stage.embedding %emb, %tok : (!stage.tensor<[V, D], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[B, S, D], bf16>
  %g = stage.param "norm" : !stage.tensor<[D], bf16>
  %n = stage.norm rms %x weight %g : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, S, D], bf16>
  %wq = stage.param "wq" : !stage.tensor<[D, H, Dh], bf16>
  %q = stage.einsum "bsd,dhk->bshk" %n, %wq : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  %qr = stage.rope %q : !stage.tensor<[B, S, H, Dh], bf16>
  %wk = stage.param "wk" : !stage.tensor<[D, KV, Dh], bf16>
  %k = stage.einsum "bsd,dhk->bshk" %n, %wk : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, KV, Dh], bf16>) -> !stage.tensor<[B, S, KV, Dh], bf16>
  %o = stage.attention %qr, %k, %k causal : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  %s = stage.ewise silu %o : (!stage.tensor<[B, S, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  %t = stage.transpose %s [0, 2, 1, 3] : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, H, S, Dh], bf16>
  %tt = stage.transpose %t [0, 2, 1, 3] : !stage.tensor<[B, H, S, Dh], bf16> -> !stage.tensor<[B, S, H, Dh], bf16>
  %sl = stage.slice %tt dim 3 offset 0 size Dh/2 : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, S, H, Dh/2], bf16>
  %sl2 = stage.slice %tt dim 3 offset Dh/2 size Dh/2 : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, S, H, Dh/2], bf16>
  %cc = stage.concat %sl, %sl2 dim 3 : (!stage.tensor<[B, S, H, Dh/2], bf16>, !stage.tensor<[B, S, H, Dh/2], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  %rs = stage.reshape %cc : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, S, H*Dh], bf16>
  %wo = stage.param "wo" : !stage.tensor<[H*Dh, D], bf16>
  %y = stage.einsum "bse,ed->bsd" %rs, %wo : (!stage.tensor<[B, S, H*Dh], bf16>, !stage.tensor<[H*Dh, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
  %dr, %mask = stage.dropout %y : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, S, D], i8>
  %wr = stage.param "router" : !stage.tensor<[D, E], bf16>
  %sc = stage.einsum "bsd,de->bse" %dr, %wr : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, E], bf16>) -> !stage.tensor<[B, S, E], bf16>
  %sm = stage.softmax %sc dim 2 : !stage.tensor<[B, S, E], bf16>
  %w, %ids = stage.topk %sm k K : !stage.tensor<[B, S, E], bf16> -> !stage.tensor<[B, S, K], bf16>, !stage.tensor<[B, S, K], i32>
  %ws = stage.reduce sum %w dims [2] : !stage.tensor<[B, S, K], bf16> -> !stage.tensor<[B, S], bf16>
  %wb = stage.broadcast %ws dims [2] : !stage.tensor<[B, S], bf16> -> !stage.tensor<[B, S, D], bf16>
  %z = stage.ewise mul %dr, %wb : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
  %wh = stage.param "lm_head" : !stage.tensor<[D, V], bf16>
  %logits = stage.einsum "bsd,dv->bsv" %z, %wh : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, V], bf16>) -> !stage.tensor<[B, S, V], bf16>
  %loss = stage.cross_entropy %logits, %tok : (!stage.tensor<[B, S, V], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[], f32>
  return %loss : !stage.tensor<[], f32>
}
}
