// RUN: stage-translate --stage-to-report %s | FileCheck %s
// RUN: stage-translate --stage-to-report --format=json %s | FileCheck %s --check-prefix=JSON

// One Llama decoder layer (GQA, SwiGLU, RMSNorm, RoPE, fused attention) with
// B=1, S=8, D=16, H=4, KV=2, Dh=4, F=32. Contractions, by hand:
//   q, k, v projections  2*B*S*D*(H + 2*KV)*Dh   = 2*8*16*8*4   =  8192
//   attention            2*B*S*S*H*(Dh + Dh)     = 2*8*8*4*8    =  4096
//   output projection    2*B*S*H*Dh*D            = 2*8*16*16    =  4096
//   gate, up, down       3 * 2*B*S*D*F           = 6*8*16*32    = 24576
//                                                          total  40960
// Other FLOPs: two rms norms with weight 2*4*B*S*D = 1024, rope on q and k
// 3*B*S*(H + KV)*Dh = 576, softmax 4*B*S*S*H = 1024, silu 5*B*S*F = 1280,
// gate*up B*S*F = 256, two residual adds 2*B*S*D = 256; total 4416.

module attributes {stage.bindings = {B = 1, S = 8, D = 16, H = 4, KV = 2, Dh = 4, F = 32}} {
  func.func @layer(%x: !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16> {
    %g1 = stage.param "input_layernorm" : !stage.tensor<[D], bf16>
    %wq = stage.param "q_proj" : !stage.tensor<[D, H, Dh], bf16>
    %wk = stage.param "k_proj" : !stage.tensor<[D, KV, Dh], bf16>
    %wv = stage.param "v_proj" : !stage.tensor<[D, KV, Dh], bf16>
    %wo = stage.param "o_proj" : !stage.tensor<[H, Dh, D], bf16>
    %g2 = stage.param "post_attention_layernorm" : !stage.tensor<[D], bf16>
    %wg = stage.param "gate_proj" : !stage.tensor<[D, F], bf16>
    %wu = stage.param "up_proj" : !stage.tensor<[D, F], bf16>
    %wd = stage.param "down_proj" : !stage.tensor<[F, D], bf16>
    %n = stage.norm rms %x weight %g1 : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    %q = stage.einsum "bsd,dhk->bshk" %n, %wq : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
    %k = stage.einsum "bsd,dhk->bshk" %n, %wk : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, KV, Dh], bf16>) -> !stage.tensor<[B, S, KV, Dh], bf16>
    %v = stage.einsum "bsd,dhk->bshk" %n, %wv : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, KV, Dh], bf16>) -> !stage.tensor<[B, S, KV, Dh], bf16>
    %qr = stage.rope %q : !stage.tensor<[B, S, H, Dh], bf16>
    %kr = stage.rope %k : !stage.tensor<[B, S, KV, Dh], bf16>
    %a = stage.attention %qr, %kr, %v causal : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
    %o = stage.einsum "bshk,hkd->bsd" %a, %wo : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[H, Dh, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    %h = stage.ewise add %x, %o : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    %n2 = stage.norm rms %h weight %g2 : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    %gt = stage.einsum "bsd,df->bsf" %n2, %wg : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, S, F], bf16>
    %up = stage.einsum "bsd,df->bsf" %n2, %wu : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, S, F], bf16>
    %act = stage.ewise silu %gt : (!stage.tensor<[B, S, F], bf16>) -> !stage.tensor<[B, S, F], bf16>
    %m = stage.ewise mul %act, %up : (!stage.tensor<[B, S, F], bf16>, !stage.tensor<[B, S, F], bf16>) -> !stage.tensor<[B, S, F], bf16>
    %dn = stage.einsum "bsf,fd->bsd" %m, %wd : (!stage.tensor<[B, S, F], bf16>, !stage.tensor<[F, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    %out = stage.ewise add %h, %dn : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    return %out : !stage.tensor<[B, S, D], bf16>
  }
}

// CHECK: | contraction FLOPs | {{.*}} | 40960 |
// CHECK: | other FLOPs | {{.*}} | 4416 |
// CHECK: | total FLOPs | {{.*}} | 45376 |

// JSON:      "functions": [
// JSON:          "name": "layer",
// JSON:          "flops": {
// JSON-NEXT:       "contraction": {
// JSON-NEXT:         "expr": "4*B*S*S*H*Dh + 4*B*S*D*H*Dh + 4*B*S*D*KV*Dh + 6*B*S*D*F",
// JSON-NEXT:         "value": 40960,
// JSON-NEXT:         "unit": "FLOP"
