//===- AttentionBlocks.cpp - Grouped-query and latent attention -----------===//

#include "LayerScope.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::models;
using sym::Expr;
using symbols::S;

/// Megatron's unfused attention core: the scores, softmax (with the
/// scaling and causal mask fused, as Megatron's kernel does), dropout of
/// the probabilities, and their product with the values. Marked as the
/// attention core, which selective recomputation recomputes.
static FailureOr<Value> buildUnfusedCore(LayerScope &scope,
                                         const ModelConfig &c, bool dropout,
                                         Value q, Value k, Value v) {
  GraphBuilder &g = scope.body();
  if (c.kvHeads != c.heads) {
    emitError(q.getLoc()) << "--attention=unfused needs multi-head attention "
                             "(num_key_value_heads = num_attention_heads = "
                          << c.heads << "), not " << c.kvHeads << " kv heads";
    return failure();
  }
  auto mark = [&](Value r) {
    markAttentionCore(r.getDefiningOp());
    return r;
  };
  Value scores = mark(g.einsum("bshk,bthk->bhst", {q, k}));
  Value probs = mark(g.softmax(scores, 3));
  if (dropout && c.attentionDropout > 0)
    probs = mark(g.dropout(probs));
  return mark(g.einsum("bhst,bthk->bshk", {probs, v}));
}

/// The name of a q, k or v projection. A fused checkpoint tensor (Phi-3's
/// qkv_proj, Falcon's query_key_value) is built as its parts, named
/// `qkv_proj[q]` and so on: the same weights, FLOPs and tensor-parallel
/// split as Megatron's fused layout, one GEMM per part.
static std::string projectionName(const ModelConfig &c, StringRef part) {
  return c.fusedQKV ? ("self_attn.qkv_proj[" + part + "]").str()
                    : ("self_attn." + part + "_proj").str();
}

/// `x` projected by `w` to heads, `[B, S, heads, Dh]`, with its bias.
static Value projectHeads(LayerScope &scope, const ModelConfig &c, Value x,
                          Value w, StringRef part, const Expr &heads) {
  Value y = scope.body().einsum("bsd,dhk->bshk", {x, w});
  y = addBias(scope, y, projectionName(c, part) + ".bias", {heads, S("Dh")},
              "attention", c.qkvBias);
  return c.clipQKV ? scope.body().generic({y}, 2) : y;
}

/// Qwen3's and Gemma-3's per-head norm (a weight of Dh) or OLMo-2's norm
/// over all of a token's heads (a weight of heads x Dh, applied as the
/// per-head normalization times that weight: the same FLOPs; the sum of
/// squares across tensor-parallel ranks is not modeled).
static Value normHeads(LayerScope &scope, const ModelConfig &c, Value v,
                       StringRef name, const Expr &heads) {
  GraphBuilder &g = scope.body();
  NormKind kind = c.norm == NormStyle::RMS ? NormKind::rms : NormKind::layer;
  if (c.qkNorm == QKNorm::Weightless)
    return g.norm(NormKind::rms, v);
  if (c.qkNorm == QKNorm::PerHead)
    return g.norm(kind, v, scope.weight(name, {S("Dh")}, "attention"));
  Value w = scope.weight(name, {heads, S("Dh")}, "attention");
  return g.ewise(EwiseKind::mul, {g.norm(kind, v), w});
}

/// gpt-oss's attention sinks: a learned logit per head joins the softmax of
/// each (token, head) row without a value, so the attention output is
/// rescaled by the share the keys keep, sum / (sum + exp(sink)): an exp, an
/// add and a division per row (from the row's log-sum-exp), then a multiply
/// per output element. Kernels with sinks fold both into the attention's
/// epilogue; the FLOPs are the same.
static Value applySinks(LayerScope &scope, Value o) {
  GraphBuilder &g = scope.body();
  SymTensorType ot = GraphBuilder::typeOf(o);
  Expr B = ot.getDim(0), Seq = ot.getDim(1), H = ot.getDim(2);
  Value sinks = scope.weight("self_attn.sinks", {H}, "attention");
  Value share = g.generic({g.broadcast(sinks, {0, 1}, {B, Seq, H})}, 3);
  return g.ewise(EwiseKind::mul, {o, g.broadcast(share, {3}, ot.getDims())});
}

/// Multi-head and grouped-query attention: q, k, v projections with
/// optional biases and norms, RoPE unless positions are learned or the
/// layer has none, fused or unfused attention (over a sliding window in a
/// sliding layer), output projection.
static FailureOr<Value> buildGroupedAttention(LayerScope &scope,
                                              const ModelConfig &c,
                                              const BuildOptions &opts, Value x,
                                              const LayerKind &layer) {
  bool sliding = layer.sliding;
  GraphBuilder &g = scope.body();
  Expr D = S("D"), H = S("H"), Dh = S("Dh");
  // MHA models (GPT) have no separate kv-head count; nor has the unfused
  // core, whose score einsum pairs each query head with its key head.
  bool mha = c.kvHeads == c.heads &&
             (c.learnedPositions || opts.attention == AttentionImpl::Unfused);
  Expr KV = mha ? H : S("KV");
  Value q, gate;
  if (c.attentionOutputGate) {
    // Qwen3-Next's q_proj yields each head's query and its gate side by
    // side, [H, 2 Dh]: one product, as the checkpoint's one tensor.
    Value wqg =
        scope.weight(projectionName(c, "q"), {D, H, Expr(2) * Dh}, "attention");
    Value qg = g.einsum("bsd,dhk->bshk", {x, wqg});
    qg = addBias(scope, qg, projectionName(c, "q") + ".bias",
                 {H, Expr(2) * Dh}, "attention", c.qkvBias);
    q = g.slice(qg, 3, Expr(0), Dh);
    gate = g.slice(qg, 3, Dh, Dh);
  } else {
    Value wq = scope.weight(projectionName(c, "q"), {D, H, Dh}, "attention");
    q = projectHeads(scope, c, x, wq, "q", H);
  }
  Value wk = scope.weight(projectionName(c, "k"), {D, KV, Dh}, "attention");
  Value wv = scope.weight(projectionName(c, "v"), {D, KV, Dh}, "attention");
  Value k = projectHeads(scope, c, x, wk, "k", KV);
  Value v = projectHeads(scope, c, x, wv, "v", KV);
  // Llama 4's positionless layers have neither the norm nor RoPE.
  if (c.qkNorm != QKNorm::None && !layer.positionless) {
    q = normHeads(scope, c, q, "self_attn.q_norm", H);
    k = normHeads(scope, c, k, "self_attn.k_norm", KV);
  }
  if (layer.positionless && c.attentionTemperature)
    q = g.generic({q}, 1);
  if (c.rotary && !c.learnedPositions && !layer.positionless) {
    // Partial rotary: the first Dr channels of each head rotate, the rest
    // pass through, and the two are joined again.
    auto rotate = [&](Value t) {
      if (!c.rotaryDim || c.rotaryDim >= c.headDim)
        return g.rope(t);
      Expr Dr = S("Dr");
      return g.concat({g.rope(g.slice(t, 3, Expr(0), Dr)),
                       g.slice(t, 3, Dr, Dh - Dr)},
                      3);
    };
    q = rotate(q);
    k = rotate(k);
  }
  Value o;
  if (opts.attention == AttentionImpl::Unfused) {
    if (sliding) {
      emitError(x.getLoc()) << "--attention=unfused materializes the full "
                               "score matrix; sliding-window layers need the "
                               "fused form";
      return failure();
    }
    FailureOr<Value> core = buildUnfusedCore(scope, c, opts.dropout, q, k, v);
    if (failed(core))
      return failure();
    o = *core;
  } else {
    o = g.attention(q, k, v, /*causal=*/true,
                    sliding ? std::optional<Expr>(S("W")) : std::nullopt,
                    c.attentionSoftcap.has_value());
  }
  if (c.attentionSinks)
    o = applySinks(scope, o);
  if (gate)
    o = g.ewise(EwiseKind::mul, {o, g.ewise(EwiseKind::sigmoid, {gate})});
  Value wo = scope.weight("self_attn.o_proj", {H, Dh, D}, "attention");
  Value out = g.einsum("bshk,hkd->bsd", {o, wo});
  return addBias(scope, out, "self_attn.o_proj.bias", {D}, "attention",
                 c.outputBias);
}

/// Multi-head latent attention (DeepSeek-V2/V3): low-rank q and kv
/// projections with their norms, a decoupled RoPE part shared by all heads.
static Value buildLatentAttention(LayerScope &scope, const ModelConfig &c,
                                  Value x) {
  GraphBuilder &g = scope.body();
  Expr D = S("D"), H = S("H"), Dn = S("Dn"), Dr = S("Dr"), Dv = S("Dv"),
       Kr = S("Kr");
  SymTensorType xt = GraphBuilder::typeOf(x);
  Expr B = xt.getDim(0), Seq = xt.getDim(1);
  Value q;
  if (c.latent.qLoraRank) {
    Expr Qr = S("Qr");
    Value wqa = scope.weight("self_attn.q_a_proj", {D, Qr}, "attention");
    Value qa = g.einsum("bsd,dr->bsr", {x, wqa});
    Value qn = scope.weight("self_attn.q_a_layernorm", {Qr}, "attention");
    qa = g.norm(NormKind::rms, qa, qn);
    Value wqb = scope.weight("self_attn.q_b_proj", {Qr, H, Dn + Dr}, "attention");
    q = g.einsum("bsr,rhk->bshk", {qa, wqb});
  } else {
    Value wq = scope.weight("self_attn.q_proj", {D, H, Dn + Dr}, "attention");
    q = g.einsum("bsd,dhk->bshk", {x, wq});
  }
  Value qNope = g.slice(q, 3, Expr(0), Dn);
  Value qPe = g.rope(g.slice(q, 3, Dn, Dr));
  Value wkva =
      scope.weight("self_attn.kv_a_proj_with_mqa", {D, Kr + Dr}, "attention");
  Value ckv = g.einsum("bsd,dc->bsc", {x, wkva});
  Value latent = g.slice(ckv, 2, Expr(0), Kr);
  Value kPe = g.rope(g.slice(ckv, 2, Kr, Dr));
  Value kvn = scope.weight("self_attn.kv_a_layernorm", {Kr}, "attention");
  latent = g.norm(NormKind::rms, latent, kvn);
  Value wkvb = scope.weight("self_attn.kv_b_proj", {Kr, H, Dn + Dv}, "attention");
  Value kv = g.einsum("bsc,chk->bshk", {latent, wkvb});
  Value kNope = g.slice(kv, 3, Expr(0), Dn);
  Value v = g.slice(kv, 3, Dn, Dv);
  Value kPeHeads = g.broadcast(kPe, {2}, {B, Seq, H, Dr});
  Value query = g.concat({qNope, qPe}, 3);
  Value key = g.concat({kNope, kPeHeads}, 3);
  Value o = g.attention(query, key, v, /*causal=*/true);
  Value wo = scope.weight("self_attn.o_proj", {H, Dv, D}, "attention");
  return g.einsum("bshk,hkd->bsd", {o, wo});
}

FailureOr<Value> mlir::stage::models::buildAttention(
    LayerScope &scope, const ModelConfig &config, const BuildOptions &options,
    Value x, const LayerKind &kind) {
  if (config.attention == AttentionKind::Latent) {
    if (options.attention == AttentionImpl::Unfused) {
      emitError(x.getLoc()) << "--attention=unfused is for multi-head "
                               "attention; latent attention stays fused";
      return failure();
    }
    return buildLatentAttention(scope, config, x);
  }
  return buildGroupedAttention(scope, config, options, x, kind);
}
