//===- SharedBlocks.cpp - Zamba2's transformer blocks shared across depth -===//
//
// A use of a shared block, as HF's Zamba2HybridLayer computes it: the
// layer's input joined with the token embeddings (2 D channels) and
// normed; attention from those 2 D channels (H heads of Dh = 2 D / H) back
// to D; a norm, the gated MLP; the use's own D x D `linear`. That output is
// added to the input of the layer's Mamba-2 mixer, whose residual stream
// is the layer's input alone. Each use's low-rank adapters (down to
// `adapterRank`, up to the projection's width) add to the MLP's gate and up
// projections and, with attention adapters, to q, k and v.
//
//===----------------------------------------------------------------------===//

#include "LayerScope.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::models;
using sym::Expr;
using symbols::S;

Value SharedBlockLayers::blockWeight(int64_t block, StringRef name,
                                     ArrayRef<Expr> dims, StringRef group) {
  std::string full = "shared[" + std::to_string(block) + "]." + name.str();
  Value &w = weights[full];
  if (!w)
    w = GraphBuilder(b, loc).param(full, dims, paramType, group);
  return w;
}

Value SharedBlockLayers::sharedBlock(int64_t block, int64_t layer, Value x) {
  GraphBuilder g(b, loc);
  const SharedBlockConfig &s = *c.sharedBlocks;
  Expr D = S("D"), D2 = Expr(2) * S("D"), H = S("H"), KV = S("KV"),
       Dh = S("Dh"), F = S("F"), Ra = S("Ra");
  std::string own = "layers[" + std::to_string(layer) + "].";
  auto ownWeight = [&](StringRef name, ArrayRef<Expr> dims, StringRef group) {
    return g.param(own + name.str(), dims, paramType, group);
  };
  // A use's adapter of `in` (channels `from`): down to Ra, then up.
  auto adapter = [&](StringRef name, Value in, StringRef downSpec,
                     const Expr &from, StringRef upSpec,
                     ArrayRef<Expr> upDims, StringRef group) {
    Value down = ownWeight((name + ".down").str(), {from, Ra}, group);
    Value up = ownWeight((name + ".up").str(), upDims, group);
    return g.einsum(upSpec, {g.einsum(downSpec, {in, down}), up});
  };
  Value h = g.concat({x, embeddings}, 2);
  h = g.norm(NormKind::rms, h,
             blockWeight(block, "input_layernorm", {D2}, "norm"));
  auto project = [&](StringRef part, const Expr &heads) {
    Value w = blockWeight(block, ("self_attn." + part + "_proj").str(),
                          {D2, heads, Dh}, "attention");
    Value y = g.einsum("bsd,dhk->bshk", {h, w});
    if (!s.attentionAdapters)
      return y;
    Value a = adapter(("adapters." + part).str(), h, "bsd,dr->bsr", D2,
                      "bsr,rhk->bshk", {Ra, heads, Dh}, "attention");
    return g.ewise(EwiseKind::add, {y, a});
  };
  Value q = project("q", H), k = project("k", KV), v = project("v", KV);
  if (s.rotary) {
    q = g.rope(q);
    k = g.rope(k);
  }
  Value o = g.attention(q, k, v, /*causal=*/true);
  Value wo = blockWeight(block, "self_attn.o_proj", {H, Dh, D}, "attention");
  Value m = g.einsum("bshk,hkd->bsd", {o, wo});
  m = g.norm(NormKind::rms, m,
             blockWeight(block, "pre_ff_layernorm", {D}, "norm"));
  // gate_up_proj, built as its gate and up halves, each with its half of
  // the adapter's up projection.
  Value ra = g.einsum(
      "bsd,dr->bsr",
      {m, ownWeight("adapters.gate_up.down", {D, Ra}, "mlp")});
  auto half = [&](StringRef part) {
    Value w = blockWeight(block, ("feed_forward.gate_up_proj[" + part + "]").str(),
                          {D, F}, "mlp");
    Value up = ownWeight(("adapters.gate_up.up[" + part + "]").str(), {Ra, F},
                         "mlp");
    return g.ewise(EwiseKind::add, {g.einsum("bsd,df->bsf", {m, w}),
                                    g.einsum("bsr,rf->bsf", {ra, up})});
  };
  Value gate = half("gate"), up = half("up");
  Value a = g.ewise(EwiseKind::mul, {activate(g, c.activation, gate), up});
  Value wd = blockWeight(block, "feed_forward.down_proj", {F, D}, "mlp");
  Value out = g.einsum("bsf,fd->bsd", {a, wd});
  return g.einsum("bsd,de->bse", {out, ownWeight("linear", {D, D}, "mlp")});
}

Value SharedBlockLayers::build(int64_t layer, Value x) {
  Block *body = b.getInsertionBlock();
  Operation *last = body->empty() ? nullptr : &body->back();
  const SharedBlockConfig &s = *c.sharedBlocks;
  int64_t use = s.useAt(layer);
  Value t = sharedBlock(use % s.blocks, layer, x);
  LayerScope scope(b, loc, "layers[" + std::to_string(layer) + "]", paramType,
                   x);
  GraphBuilder &g = scope.body();
  Value h = g.ewise(EwiseKind::add, {x, t});
  h = g.norm(NormKind::rms, h, scope.weight("norm", {S("D")}, "norm"));
  Value y = g.ewise(EwiseKind::add, {x, buildMamba(scope, c, h)});
  for (Operation *op = last ? last->getNextNode() : &body->front(); op;
       op = op->getNextNode())
    if (!isa<ParamOp>(op))
      setModelLayer(op, layer);
  return y;
}
