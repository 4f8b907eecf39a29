//===- FeedForwardBlocks.cpp - Dense and mixture-of-experts FFNs ----------===//

#include "LayerScope.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::models;
using sym::Expr;
using symbols::S;

Value mlir::stage::models::activate(GraphBuilder &g, Activation a, Value x) {
  switch (a) {
  case Activation::SiLU:
    return g.ewise(EwiseKind::silu, {x});
  case Activation::GeLU:
    return g.ewise(EwiseKind::gelu, {x});
  case Activation::ReLU:
    return g.ewise(EwiseKind::relu, {x});
  case Activation::ReLUSquared:
    return g.ewise(EwiseKind::square, {g.ewise(EwiseKind::relu, {x})});
  }
  llvm_unreachable("unknown activation");
}

/// A dense FFN of width `F` under `prefix`: gated (act(gate) * up, then
/// down: SwiGLU, GeGLU) or not (act(up), then down), with optional biases.
/// A fused gate_up_proj (Phi-3) is built as its two parts.
static Value buildDenseFfn(LayerScope &scope, const ModelConfig &c, Value x,
                           StringRef prefix, const Expr &F, StringRef group) {
  GraphBuilder &g = scope.body();
  Expr D = S("D");
  std::string p = prefix.str();
  auto name = [&](StringRef part) {
    return c.fusedGateUp && c.gatedMlp ? p + ".gate_up_proj[" + part.str() + "]"
                                       : p + "." + part.str() + "_proj";
  };
  auto project = [&](StringRef part, Value w) {
    Value y = g.einsum("bsd,df->bsf", {x, w});
    return addBias(scope, y, name(part) + ".bias", {F}, group, c.mlpBias);
  };
  auto down = [&](Value a, Value wd) {
    Value out = g.einsum("bsf,fd->bsd", {a, wd});
    return addBias(scope, out, p + ".down_proj.bias", {D}, group, c.mlpBias);
  };
  // Weights and ops in the order of the checkpoint's modules.
  if (c.gatedMlp) {
    Value wg = scope.weight(name("gate"), {D, F}, group);
    Value wu = scope.weight(name("up"), {D, F}, group);
    Value wd = scope.weight(p + ".down_proj", {F, D}, group);
    Value gate = project("gate", wg);
    Value up = project("up", wu);
    return down(g.ewise(EwiseKind::mul, {activate(g, c.activation, gate), up}),
                wd);
  }
  Value wu = scope.weight(name("up"), {D, F}, group);
  Value a = activate(g, c.activation, project("up", wu));
  return down(a, scope.weight(p + ".down_proj", {F, D}, group));
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
  Value logits = addBias(scope, g.einsum("bsd,de->bse", {x, wr}),
                         "mlp.gate.bias", {E}, "router", m.routerLogitBias);
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
  // gpt-oss: each expert's projections have biases, [E, width], added to
  // each of its C rows.
  auto expertBias = [&](Value y, StringRef name, const Expr &width) {
    if (!m.expertBiases)
      return y;
    Value b = scope.weight(name, {E, width}, "expert");
    SymTensorType yt = GraphBuilder::typeOf(y);
    return g.ewise(EwiseKind::add, {y, g.broadcast(b, {1}, yt.getDims())});
  };
  Value gate = expertBias(g.einsum("ecd,edf->ecf", {buf, wg}),
                          "mlp.experts.gate_proj_bias", Fe);
  Value up = expertBias(g.einsum("ecd,edf->ecf", {buf, wu}),
                        "mlp.experts.up_proj_bias", Fe);
  if (m.clampedSwiGLU) {
    // min(gate, limit) times alpha inside the sigmoid; clamp(up, -limit,
    // limit) + 1.
    gate = g.generic({gate}, 2);
    up = g.generic({up}, 3);
  }
  Value a = g.ewise(EwiseKind::mul, {activate(g, c.activation, gate), up});
  Value y = expertBias(g.einsum("ecf,efd->ecd", {a, wd}),
                       "mlp.experts.down_proj_bias", D);
  Value routed = g.combine(y, weights, ids);
  if (m.sharedWidth() == 0)
    return routed;
  Value shared = buildDenseFfn(scope, c, x,
                               m.sharedExpertGate ? "mlp.shared_expert"
                                                  : "mlp.shared_experts",
                               S("Fs"), "mlp");
  if (m.sharedExpertGate) {
    // Qwen2-MoE: shared * sigmoid(x w), one gate value per token.
    Value w = scope.weight("mlp.shared_expert_gate", {D}, "mlp");
    Value gate = g.ewise(EwiseKind::sigmoid, {g.einsum("bsd,d->bs", {x, w})});
    shared =
        g.ewise(EwiseKind::mul, {shared, g.broadcast(gate, {2}, xt.getDims())});
  }
  return g.ewise(EwiseKind::add, {routed, shared});
}

Value mlir::stage::models::buildFeedForward(LayerScope &scope,
                                            const ModelConfig &config, Value x,
                                            bool moe) {
  if (moe)
    return buildMoEFfn(scope, config, x);
  return buildDenseFfn(scope, config, x, "mlp", S("F"), "mlp");
}
