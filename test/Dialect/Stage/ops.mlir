// RUN: stage-opt %s | stage-opt | FileCheck %s
// RUN: stage-opt %s -mlir-print-op-generic | stage-opt | FileCheck %s

// Every op, type and attribute of the dialect survives printing and parsing,
// in the custom and in the generic form.

// CHECK: stage.grid @grid [pp, dp, cp, ep, tp]
stage.grid @grid [pp, dp, cp, ep, tp]

// CHECK-LABEL: func.func @types_and_attrs
// CHECK-SAME: !stage.tensor<[B/dp, S/(cp*tp), D], bf16>
// CHECK-SAME: !stage.tensor<[], f32>
// CHECK-SAME: !stage.tensor<[H*Dh + 2*KV*Dh, 3], f8E4M3FN>
// CHECK-SAME: !stage.tensor<[S*S, -B + 2*D], i1>
func.func @types_and_attrs(%a: !stage.tensor<[B/dp, S/(tp*cp), D], bf16>,
                           %b: !stage.tensor<[], f32>,
                           %c: !stage.tensor<[(H + 2*KV)*Dh, 3], f8E4M3FN>,
                           %d: !stage.tensor<[S*S, 2*D - B], i1>)
    attributes {e = #stage.expr<2*B*S*D/tp>, f = #stage.expr<0>,
                g = #stage.sharding<[[dp], [cp, tp], []]>,
                h = #stage.sharding<[[dp], []], partial = [tp]>,
                i = #stage.sharding<[], partial = [dp, cp]>} {
  // CHECK: e = #stage.expr<2*B*S*D/tp>
  // CHECK-SAME: f = #stage.expr<0>
  // CHECK-SAME: g = #stage.sharding<{{\[}}[dp], [cp, tp], []]>
  // CHECK-SAME: h = #stage.sharding<{{\[}}[dp], []], partial = [tp]>
  // CHECK-SAME: i = #stage.sharding<[], partial = [dp, cp]>
  return
}

// CHECK-LABEL: func.func @compute
func.func @compute() {
  // CHECK: stage.input "tokens" : !stage.tensor<[B, S], i32>
  %tok = stage.input "tokens" : !stage.tensor<[B, S], i32>
  // CHECK: stage.param "embed" : !stage.tensor<[V, D], bf16>
  %emb = stage.param "embed" : !stage.tensor<[V, D], bf16>
  // CHECK: stage.param "embed" kind "exp_avg" : !stage.tensor<[V, D], f32>
  %m = stage.param "embed" kind "exp_avg" : !stage.tensor<[V, D], f32>
  // CHECK: stage.embedding %{{.*}}, %{{.*}} : (!stage.tensor<[V, D], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[B, S, D], bf16>
  %x = stage.embedding %emb, %tok : (!stage.tensor<[V, D], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[B, S, D], bf16>
  %g = stage.param "norm" : !stage.tensor<[D], bf16>
  // CHECK: stage.norm rms %{{.*}} weight %{{.*}} :
  %n = stage.norm rms %x weight %g : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, S, D], bf16>
  // CHECK: stage.norm layer %{{.*}} weight %{{.*}} bias %{{.*}} :
  %ln = stage.norm layer %x weight %g bias %g : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, S, D], bf16>
  // CHECK: stage.norm layer %{{.*}} : (!stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
  %ln2 = stage.norm layer %x : (!stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
  %wq = stage.param "wq" : !stage.tensor<[D, H, Dh], bf16>
  // CHECK: stage.einsum "bsd,dhk->bshk" %{{.*}}, %{{.*}} : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  %q = stage.einsum "bsd,dhk->bshk" %n, %wq : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  // CHECK: stage.rope %{{.*}} : !stage.tensor<[B, S, H, Dh], bf16>
  %qr = stage.rope %q : !stage.tensor<[B, S, H, Dh], bf16>
  %k = stage.input "k" : !stage.tensor<[B, S, KV, Dh], bf16>
  // CHECK: stage.attention %{{.*}}, %{{.*}}, %{{.*}} causal :
  %o = stage.attention %qr, %k, %k causal : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  // CHECK: stage.attention %{{.*}}, %{{.*}}, %{{.*}} :
  %o2 = stage.attention %qr, %k, %k : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  // CHECK: stage.ewise silu %{{.*}} :
  %s = stage.ewise silu %o : (!stage.tensor<[B, S, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  %bias = stage.param "bias" : !stage.tensor<[Dh], bf16>
  // CHECK: stage.ewise add %{{.*}}, %{{.*}} : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  %sb = stage.ewise add %s, %bias : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  // CHECK: stage.ewise cast %{{.*}} : (!stage.tensor<[B, S, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], f32>
  %f = stage.ewise cast %sb : (!stage.tensor<[B, S, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], f32>
  // CHECK: stage.ewise generic %{{.*}}, %{{.*}} {flops_per_element = 7 : i64} :
  %gen = stage.ewise generic %f, %f {flops_per_element = 7} : (!stage.tensor<[B, S, H, Dh], f32>, !stage.tensor<[B, S, H, Dh], f32>) -> !stage.tensor<[B, S, H, Dh], f32>
  // CHECK: stage.reduce sum %{{.*}} dims [3] : !stage.tensor<[B, S, H, Dh], f32> -> !stage.tensor<[B, S, H], f32>
  %r = stage.reduce sum %f dims [3] : !stage.tensor<[B, S, H, Dh], f32> -> !stage.tensor<[B, S, H], f32>
  // CHECK: stage.softmax %{{.*}} dim 2 : !stage.tensor<[B, S, H], f32>
  %sm = stage.softmax %r dim 2 : !stage.tensor<[B, S, H], f32>
  // CHECK: stage.reshape %{{.*}} : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, S, H*Dh], bf16>
  %rs = stage.reshape %o : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, S, H*Dh], bf16>
  // CHECK: stage.transpose %{{.*}} [0, 2, 1, 3] : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, H, S, Dh], bf16>
  %t = stage.transpose %o [0, 2, 1, 3] : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, H, S, Dh], bf16>
  // CHECK: stage.slice %{{.*}} dim 3 offset 0 size Dh/2 : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, S, H, Dh/2], bf16>
  %sl = stage.slice %o dim 3 offset 0 size Dh/2 : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, S, H, Dh/2], bf16>
  // CHECK: stage.concat %{{.*}}, %{{.*}} dim 3 : (!stage.tensor<[B, S, H, Dh/2], bf16>, !stage.tensor<[B, S, H, Dh], bf16>) -> !stage.tensor<[B, S, H, 3*Dh/2], bf16>
  %cc = stage.concat %sl, %o dim 3 : (!stage.tensor<[B, S, H, Dh/2], bf16>, !stage.tensor<[B, S, H, Dh], bf16>) -> !stage.tensor<[B, S, H, 3*Dh/2], bf16>
  // CHECK: stage.broadcast %{{.*}} dims [0, 1] : !stage.tensor<[D], bf16> -> !stage.tensor<[B, S, D], bf16>
  %bc = stage.broadcast %g dims [0, 1] : !stage.tensor<[D], bf16> -> !stage.tensor<[B, S, D], bf16>
  %wo = stage.param "lm_head" : !stage.tensor<[D, V], bf16>
  %logits = stage.einsum "bsd,dv->bsv" %n, %wo : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, V], bf16>) -> !stage.tensor<[B, S, V], bf16>
  // CHECK: stage.cross_entropy %{{.*}}, %{{.*}} : (!stage.tensor<[B, S, V], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[], f32>
  %loss = stage.cross_entropy %logits, %tok : (!stage.tensor<[B, S, V], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[], f32>
  return
}

// CHECK-LABEL: func.func @moe
func.func @moe(%x: !stage.tensor<[B, S, D], bf16>, %scores: !stage.tensor<[B, S, E], f32>) {
  // CHECK: stage.topk %{{.*}} k K : !stage.tensor<[B, S, E], f32> -> !stage.tensor<[B, S, K], f32>, !stage.tensor<[B, S, K], i32>
  %w, %ids = stage.topk %scores k K : !stage.tensor<[B, S, E], f32> -> !stage.tensor<[B, S, K], f32>, !stage.tensor<[B, S, K], i32>
  // CHECK: stage.dispatch %{{.*}}, %{{.*}} : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[E, B*S*K/E, D], bf16>
  %buf = stage.dispatch %x, %ids : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[E, B*S*K/E, D], bf16>
  // CHECK: stage.combine %{{.*}}, %{{.*}}, %{{.*}} : (!stage.tensor<[E, B*S*K/E, D], bf16>, !stage.tensor<[B, S, K], f32>, !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[B, S, D], bf16>
  %y = stage.combine %buf, %w, %ids : (!stage.tensor<[E, B*S*K/E, D], bf16>, !stage.tensor<[B, S, K], f32>, !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[B, S, D], bf16>
  return
}

// CHECK-LABEL: func.func @repeat
func.func @repeat(%x: !stage.tensor<[B, D], bf16>, %w: !stage.tensor<[L, D, D], bf16>) -> !stage.tensor<[B, D], bf16> {
  // CHECK: %[[R:.*]]:2 = stage.repeat L carry(%[[A:.*]] = %{{.*}} : !stage.tensor<[B, D], bf16>) slice(%[[W:.*]] = %{{.*}} : !stage.tensor<[L, D, D], bf16>) -> stack(!stage.tensor<[L, B, D], bf16>) {
  %h, %saved = stage.repeat L carry(%a = %x : !stage.tensor<[B, D], bf16>) slice(%wi = %w : !stage.tensor<[L, D, D], bf16>) -> stack(!stage.tensor<[L, B, D], bf16>) {
    // CHECK: stage.einsum "bd,de->be" %[[A]], %[[W]]
    %y = stage.einsum "bd,de->be" %a, %wi : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    // CHECK: stage.yield %{{.*}}, %[[A]] : !stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>
    stage.yield %y, %a : !stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>
  }
  // CHECK: stage.repeat reverse L - 1 carry
  %g = stage.repeat reverse L - 1 carry(%b = %h : !stage.tensor<[B, D], bf16>) {
    stage.yield %b : !stage.tensor<[B, D], bf16>
  }
  // CHECK: stage.repeat 3 {
  stage.repeat 3 {
    stage.yield
  }
  return %g : !stage.tensor<[B, D], bf16>
}

// CHECK-LABEL: func.func @comm
func.func @comm(%x: !stage.tensor<[B, S/tp, D], bf16>, %e: !stage.tensor<[E, C/ep, D], bf16>) {
  // CHECK: stage.all_gather %{{.*}} on @grid [tp] dim 1 : !stage.tensor<[B, S/tp, D], bf16> -> !stage.tensor<[B, S, D], bf16>
  %g = stage.all_gather %x on @grid [tp] dim 1 : !stage.tensor<[B, S/tp, D], bf16> -> !stage.tensor<[B, S, D], bf16>
  // CHECK: stage.all_reduce %{{.*}} on @grid [dp, tp] : !stage.tensor<[B, S, D], bf16>
  %r = stage.all_reduce %g on @grid [dp, tp] : !stage.tensor<[B, S, D], bf16>
  // CHECK: stage.reduce_scatter %{{.*}} on @grid [tp] dim 1 : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, S/tp, D], bf16>
  %s = stage.reduce_scatter %r on @grid [tp] dim 1 : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, S/tp, D], bf16>
  // CHECK: stage.all_to_all %{{.*}} on @grid [ep] split 0 concat 1 : !stage.tensor<[E, C/ep, D], bf16> -> !stage.tensor<[E/ep, C, D], bf16>
  %a = stage.all_to_all %e on @grid [ep] split 0 concat 1 : !stage.tensor<[E, C/ep, D], bf16> -> !stage.tensor<[E/ep, C, D], bf16>
  // CHECK: stage.send %{{.*}} on @grid [pp] shift 1 channel 0 : !stage.tensor<[B, S/tp, D], bf16>
  stage.send %s on @grid [pp] shift 1 channel 0 : !stage.tensor<[B, S/tp, D], bf16>
  // CHECK: stage.recv on @grid [pp] shift -1 channel 0 : !stage.tensor<[B, S/tp, D], bf16>
  %v = stage.recv on @grid [pp] shift -1 channel 0 : !stage.tensor<[B, S/tp, D], bf16>
  return
}
