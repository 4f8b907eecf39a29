//===- TransformerBuilder.cpp - Training forward graphs -------------------===//

#include "Stage/Models/TransformerBuilder.h"

#include "LayerPattern.h"
#include "LayerScope.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::models;
using sym::Expr;
using symbols::S;

static sym::Bindings getBindings(const ModelConfig &c, const BuildOptions &o,
                                 ArrayRef<LayerRun> runs) {
  sym::Bindings b{{"B", o.batch}, {"S", o.seq}, {"D", c.hidden},
                  {"H", c.heads}, {"V", c.vocab}, {"L", c.layers}};
  if (c.attention == AttentionKind::Latent) {
    b["Dn"] = c.latent.qkNopeHeadDim;
    b["Dr"] = c.latent.qkRopeHeadDim;
    b["Dv"] = c.latent.vHeadDim;
    b["Kr"] = c.latent.kvLoraRank;
    if (c.latent.qLoraRank)
      b["Qr"] = *c.latent.qLoraRank;
  } else {
    b["Dh"] = c.headDim;
    if (c.rotary && c.rotaryDim && c.rotaryDim < c.headDim)
      b["Dr"] = c.rotaryDim;
    if (!(c.kvHeads == c.heads && c.learnedPositions))
      b["KV"] = c.kvHeads;
  }
  bool anyDense = false, anySliding = false, anyAttention = false;
  for (const LayerRun &r : runs)
    for (const LayerKind &k : r.period) {
      anyDense |= k.ffn == FfnKind::Dense;
      anySliding |= k.sliding;
      anyAttention |= k.mixer == Mixer::Attention;
    }
  if (!anyAttention && !c.sharedBlocks) {
    b.erase("H");
    b.erase("Dh");
    b.erase("KV");
    b.erase("Dr");
  }
  if (c.ssm) {
    const SSMConfig &m = *c.ssm;
    b["Ns"] = m.state;
    b["Kc"] = m.convKernel;
    if (m.version == 1) {
      b["Di"] = m.inner;
      b["R"] = m.dtRank;
    } else {
      b["Hm"] = m.heads;
      b["P"] = m.headDim;
      if (m.groups != 1 || m.version != 2) // Mamba-2's one group is 1
        b["G"] = m.groups;
      b["Q"] = m.chunk;
    }
  }
  if (anyDense || c.sharedBlocks)
    b["F"] = c.ffn;
  if (c.sharedBlocks)
    b["Ra"] = c.sharedBlocks->adapterRank;
  if (anySliding)
    b["W"] = *c.slidingWindow;
  if (c.learnedPositions)
    b["P"] = c.maxPositions;
  if (c.moe) {
    b["E"] = c.moe->experts;
    b["K"] = c.moe->topK;
    b["Fe"] = c.moe->expertFfn;
    if (c.moe->sharedWidth())
      b["Fs"] = c.moe->sharedWidth();
    if (runs[0].count == S("Ld"))
      b["Ld"] = runs[0].end;
  }
  return b;
}

/// One decoder layer from `x`: its norms where the model places them,
/// attention, the MLP and the residual adds.
static FailureOr<Value> buildLayer(LayerScope &scope, const ModelConfig &c,
                                   const BuildOptions &o, LayerKind kind,
                                   Value x) {
  GraphBuilder &g = scope.body();
  // Residual dropout: on each block's output, before it joins the stream
  // (scaled first where the model scales it: Granite's multiplier).
  auto residual = [&](Value v) {
    if (c.scaleResiduals)
      v = g.generic({v}, 1);
    return o.dropout && c.residualDropout > 0 ? g.dropout(v) : v;
  };
  Expr D = S("D");
  auto norm = [&](StringRef name, Value v) {
    Value w = scope.weight(name, {D}, "norm");
    Value b = c.normBias ? scope.weight((name + ".bias").str(), {D}, "norm")
                         : Value();
    return g.norm(c.norm == NormStyle::RMS ? NormKind::rms : NormKind::layer,
                  v, w, b);
  };
  auto add = [&](Value a, Value b) { return g.ewise(EwiseKind::add, {a, b}); };
  // Attention or a state-space mixer.
  auto mixer = [&](Value h) -> FailureOr<Value> {
    if (kind.mixer == Mixer::SSM)
      return buildMamba(scope, c, h);
    return buildAttention(scope, c, o, h, kind);
  };
  // A layer with one block (Mamba's, Nemotron-H's) has one norm before it.
  if (kind.mixer == Mixer::None || kind.ffn == FfnKind::None) {
    Value h = norm("norm", x);
    FailureOr<Value> y = kind.mixer == Mixer::None
                             ? FailureOr<Value>(buildFeedForward(
                                   scope, c, h, kind.ffn == FfnKind::MoE))
                             : mixer(h);
    if (failed(y))
      return failure();
    return add(x, residual(*y));
  }
  bool moe = kind.ffn == FfnKind::MoE;
  switch (c.normPlacement) {
  case NormPlacement::Pre:
  case NormPlacement::Sandwich: {
    bool sandwich = c.normPlacement == NormPlacement::Sandwich;
    FailureOr<Value> attn = mixer(norm("input_layernorm", x));
    if (failed(attn))
      return failure();
    Value a = sandwich ? norm("post_attention_layernorm", *attn) : *attn;
    x = add(x, residual(a));
    Value h = norm(
        sandwich ? "pre_feedforward_layernorm" : "post_attention_layernorm", x);
    Value m = buildFeedForward(scope, c, h, moe);
    if (sandwich)
      m = norm("post_feedforward_layernorm", m);
    return add(x, residual(m));
  }
  case NormPlacement::Post: {
    FailureOr<Value> attn = mixer(x);
    if (failed(attn))
      return failure();
    x = add(x, residual(norm("post_attention_layernorm", *attn)));
    Value m = buildFeedForward(scope, c, x, moe);
    return add(x, residual(norm("post_feedforward_layernorm", m)));
  }
  case NormPlacement::Parallel: {
    bool two = c.parallelNorms == 2;
    Value h = norm(two ? "ln_attn" : "input_layernorm", x);
    FailureOr<Value> attn = mixer(h);
    if (failed(attn))
      return failure();
    Value hm = two ? norm("ln_mlp", x) : h;
    Value m = buildFeedForward(scope, c, hm, moe);
    return add(x, residual(add(*attn, m)));
  }
  }
  llvm_unreachable("unknown norm placement");
}

/// The body of one run: its period's layers in order.
static FailureOr<Value> buildRun(LayerScope &scope, const ModelConfig &c,
                                 const BuildOptions &o, const LayerRun &run) {
  Value x = scope.input();
  for (auto [kind, prefix] : llvm::zip(run.period, run.prefixes)) {
    scope.setPrefix(prefix);
    FailureOr<Value> y = buildLayer(scope, c, o, kind, x);
    if (failed(y))
      return failure();
    x = *y;
  }
  return x;
}

/// `@layer`: one decoder layer from hidden states to hidden states, the
/// unit that a frontend's exported block is compared with.
static OwningOpRef<ModuleOp> buildSingleLayer(MLIRContext *ctx, Location loc,
                                              ModelConfig c,
                                              const BuildOptions &o) {
  c.layers = 1;
  if (c.moe) {
    c.moe->firstDenseLayers = 0;
    c.moe->denseLayers.clear();
    c.moe->layerPeriod = 1;
    c.moe->layerPhase = 0;
  }
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module->getBody());
  Type act = getComputeType(ctx, o.precision);
  Type xType = SymTensorType::get(ctx, {S("B"), S("S"), S("D")}, act);
  auto fn =
      func::FuncOp::create(b, loc, "layer", b.getFunctionType({}, {xType}));
  b.setInsertionPointToStart(fn.addEntryBlock());
  GraphBuilder g(b, loc);
  Value x = g.input("x", {S("B"), S("S"), S("D")}, act);
  SmallVector<LayerRun> runs = getLayerRuns(c, o.seq);
  LayerScope scope(b, loc, runs.front().count, runs.front().prefixes.front(),
                   act, x);
  FailureOr<Value> out = buildRun(scope, c, o, runs.front());
  if (failed(out))
    return {};
  func::ReturnOp::create(b, loc,
                         scope.finish(*out, runs.front().period.size()));
  setModuleBindings(*module, getBindings(c, o, runs));
  return module;
}

OwningOpRef<ModuleOp> mlir::stage::buildTransformer(MLIRContext *ctx,
                                                    Location loc,
                                                    const ModelConfig &c,
                                                    const BuildOptions &o) {
  ctx->loadDialect<StageDialect, func::FuncDialect>();
  if (o.graph == GraphKind::Layer)
    return buildSingleLayer(ctx, loc, c, o);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module->getBody());

  Type act = getComputeType(ctx, o.precision);
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  Type lossType = SymTensorType::get(ctx, ArrayRef<Expr>{}, f32);
  auto fn = func::FuncOp::create(b, loc, "forward",
                                 b.getFunctionType({}, {lossType}));
  b.setInsertionPointToStart(fn.addEntryBlock());
  GraphBuilder g(b, loc);
  Expr B = S("B"), Seq = S("S"), D = S("D"), V = S("V");

  Value tokens = g.input("tokens", {B, Seq}, i32);
  Value labels = g.input("labels", {B, Seq}, i32);
  Value embed = g.param("embed_tokens", {V, D}, act, "embedding");
  Value x = g.embedding(embed, tokens);
  if (c.learnedPositions) {
    Value positions = g.input("positions", {Seq}, i32);
    Value table = g.param("embed_positions", {S("P"), D}, act, "embedding");
    x = g.ewise(EwiseKind::add, {x, g.embedding(table, positions)});
  }
  if (c.scaleEmbeddings) // times sqrt(D)
    x = g.generic({x}, 1);
  if (o.dropout && c.embeddingDropout > 0)
    x = g.dropout(x);

  SmallVector<LayerRun> runs = getLayerRuns(c, o.seq);
  // Zamba2: the layers with a use of a shared block, between the runs.
  std::optional<SharedBlockLayers> shared;
  ArrayRef<int64_t> uses;
  if (c.sharedBlocks) {
    shared.emplace(b, loc, c, act, x);
    uses = c.sharedBlocks->uses;
  }
  auto buildUsesBefore = [&](int64_t layer) {
    for (; !uses.empty() && uses.front() < layer; uses = uses.drop_front())
      x = shared->build(uses.front(), x);
  };
  for (const LayerRun &run : runs) {
    buildUsesBefore(run.begin);
    LayerScope scope(b, loc, run.count, run.prefixes.front(), act, x);
    FailureOr<Value> out = buildRun(scope, c, o, run);
    if (failed(out))
      return {};
    x = scope.finish(*out, run.period.size());
  }
  buildUsesBefore(c.layers);

  Value normW = g.param("norm", {D}, act, "norm");
  Value normB = c.normBias ? g.param("norm.bias", {D}, act, "norm") : Value();
  x = g.norm(c.norm == NormStyle::RMS ? NormKind::rms : NormKind::layer, x,
             normW, normB);
  Value logits;
  if (c.tiedEmbeddings) {
    logits = g.einsum("bsd,vd->bsv", {x, embed});
  } else {
    Value head = g.param("lm_head", {D, V}, act, "embedding");
    logits = g.einsum("bsd,dv->bsv", {x, head});
  }
  if (c.headBias)
    logits = g.ewise(EwiseKind::add,
                     {logits, g.param("lm_head.bias", {V}, act, "embedding")});
  if (c.scaleLogits) // times logit_scale
    logits = g.generic({logits}, 1);
  if (c.logitSoftcap) // cap * tanh(logits / cap)
    logits = g.generic({logits}, 3);
  Value loss = g.crossEntropy(logits, labels, f32);
  func::ReturnOp::create(b, loc, loss);

  setModuleBindings(*module, getBindings(c, o, runs));
  setModelInfo(*module, c.architecture, c.maxPositions);
  return module;
}
