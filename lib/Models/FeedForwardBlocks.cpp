//===- FeedForwardBlocks.cpp - Dense and mixture-of-experts FFNs ----------===//

#include "LayerScope.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::models;
using sym::Expr;
using symbols::S;

/// A dense FFN of width `F` under `prefix`: SwiGLU (gate, up, down) or GeLU
/// (up, down), with optional biases.
static Value buildDenseFfn(LayerScope &scope, const ModelConfig &c, Value x,
                           StringRef prefix, const Expr &F, StringRef group) {
  GraphBuilder &g = scope.body();
  Expr D = S("D");
  std::string p = prefix.str();
  if (c.activation == ActivationKind::GeLU) {
    Value wu = scope.weight(p + ".up_proj", {D, F}, group);
    Value u = g.einsum("bsd,df->bsf", {x, wu});
    u = addBias(scope, u, p + ".up_proj.bias", {F}, group, c.mlpBias);
    Value a = g.ewise(EwiseKind::gelu, {u});
    Value wd = scope.weight(p + ".down_proj", {F, D}, group);
    Value out = g.einsum("bsf,fd->bsd", {a, wd});
    return addBias(scope, out, p + ".down_proj.bias", {D}, group, c.mlpBias);
  }
  Value wg = scope.weight(p + ".gate_proj", {D, F}, group);
  Value wu = scope.weight(p + ".up_proj", {D, F}, group);
  Value wd = scope.weight(p + ".down_proj", {F, D}, group);
  Value gate = g.einsum("bsd,df->bsf", {x, wg});
  gate = addBias(scope, gate, p + ".gate_proj.bias", {F}, group, c.mlpBias);
  Value up = g.einsum("bsd,df->bsf", {x, wu});
  up = addBias(scope, up, p + ".up_proj.bias", {F}, group, c.mlpBias);
  Value a = g.ewise(EwiseKind::mul, {g.ewise(EwiseKind::silu, {gate}), up});
  Value out = g.einsum("bsf,fd->bsd", {a, wd});
  return addBias(scope, out, p + ".down_proj.bias", {D}, group, c.mlpBias);
}

/// Routed experts behind a top-k router, plus the shared experts. Tokens are
/// dispatched to `[E, B*S*K/E, D]` buffers (balanced routing).
static Value buildMoEFfn(LayerScope &scope, const ModelConfig &c, Value x) {
  GraphBuilder &g = scope.body();
  const MoEConfig &m = *c.moe;
  Expr D = S("D"), E = S("E"), K = S("K"), Fe = S("Fe");
  SymTensorType xt = GraphBuilder::typeOf(x);
  Expr tokens = xt.getDim(0) * xt.getDim(1);

  Value wr = scope.weight("mlp.gate", {D, E}, "router");
  Value logits = g.einsum("bsd,de->bse", {x, wr});
  Value scores = m.scoring == RouterScoring::Sigmoid
                     ? g.ewise(EwiseKind::sigmoid, {logits})
                     : g.softmax(logits, 2);
  Value choice = addBias(scope, scores, "mlp.gate.e_score_correction_bias",
                         {E}, "router", m.routerBias);
  auto [weights, ids] = g.topk(choice, K, xt.getElementType());
  Value buf = g.dispatch(x, ids, E, (tokens * K).divExact(E));

  Value wg = scope.weight("mlp.experts.gate_proj", {E, D, Fe}, "expert");
  Value wu = scope.weight("mlp.experts.up_proj", {E, D, Fe}, "expert");
  Value wd = scope.weight("mlp.experts.down_proj", {E, Fe, D}, "expert");
  Value gate = g.einsum("ecd,edf->ecf", {buf, wg});
  Value up = g.einsum("ecd,edf->ecf", {buf, wu});
  Value a = g.ewise(EwiseKind::mul, {g.ewise(EwiseKind::silu, {gate}), up});
  Value y = g.einsum("ecf,efd->ecd", {a, wd});
  Value routed = g.combine(y, weights, ids);
  if (m.sharedExperts == 0)
    return routed;
  Value shared =
      buildDenseFfn(scope, c, x, "mlp.shared_experts", S("Fs"), "mlp");
  return g.ewise(EwiseKind::add, {routed, shared});
}

Value mlir::stage::models::buildFeedForward(LayerScope &scope,
                                            const ModelConfig &config, Value x,
                                            bool moe) {
  if (moe)
    return buildMoEFfn(scope, config, x);
  return buildDenseFfn(scope, config, x, "mlp", S("F"), "mlp");
}
