//===- TransformerBuilder.cpp - Training forward graphs -------------------===//

#include "Stage/Models/TransformerBuilder.h"

#include "LayerScope.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::models;
using sym::Expr;
using symbols::S;

namespace {
/// A run of consecutive identical layers: one `stage.repeat`.
struct LayerRun {
  int64_t begin, end; // layer indices [begin, end)
  bool moe;
  Expr count;
  std::string prefix;
};
} // namespace

/// Groups the layers into runs. The common shapes get symbolic counts: `L`
/// for one run, `Ld` and `L - Ld` for dense layers followed by MoE layers.
static SmallVector<LayerRun> getLayerRuns(const ModelConfig &c) {
  SmallVector<LayerRun> runs;
  for (int64_t i = 0; i < c.layers; ++i) {
    bool moe = c.isMoELayer(i);
    if (runs.empty() || runs.back().moe != moe)
      runs.push_back({i, i + 1, moe, Expr(), ""});
    else
      runs.back().end = i + 1;
  }
  bool denseThenMoE = runs.size() == 2 && !runs[0].moe &&
                      runs[0].end == (c.moe ? c.moe->firstDenseLayers : -1);
  for (LayerRun &r : runs) {
    if (runs.size() == 1)
      r.count = S("L");
    else if (denseThenMoE)
      r.count = r.moe ? S("L") - S("Ld") : S("Ld");
    else
      r.count = Expr(r.end - r.begin);
    r.prefix = runs.size() == 1 ? "layers"
                                : "layers[" + std::to_string(r.begin) + ":" +
                                      std::to_string(r.end) + "]";
  }
  return runs;
}

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
    if (!(c.kvHeads == c.heads && c.learnedPositions))
      b["KV"] = c.kvHeads;
  }
  bool anyDense = llvm::any_of(runs, [](const LayerRun &r) { return !r.moe; });
  if (anyDense)
    b["F"] = c.ffn;
  if (c.learnedPositions)
    b["P"] = c.maxPositions;
  if (c.moe) {
    b["E"] = c.moe->experts;
    b["K"] = c.moe->topK;
    b["Fe"] = c.moe->expertFfn;
    if (c.moe->sharedExperts)
      b["Fs"] = c.moe->expertFfn * c.moe->sharedExperts;
    if (runs.size() == 2 && !runs[0].moe)
      b["Ld"] = runs[0].end;
  }
  return b;
}

static FailureOr<Value> buildLayer(LayerScope &scope, const ModelConfig &c,
                                   const BuildOptions &o, bool moe) {
  GraphBuilder &g = scope.body();
  // Residual dropout: on each block's output, before it joins the stream.
  auto residual = [&](Value v) {
    return o.dropout && c.residualDropout > 0 ? g.dropout(v) : v;
  };
  Expr D = S("D");
  Value x = scope.input();
  auto norm = [&](StringRef name, Value v) {
    Value w = scope.weight(name, {D}, "norm");
    Value b = c.normBias ? scope.weight((name + ".bias").str(), {D}, "norm")
                         : Value();
    return g.norm(c.norm == NormStyle::RMS ? NormKind::rms : NormKind::layer,
                  v, w, b);
  };
  Value h = norm("input_layernorm", x);
  FailureOr<Value> attn = buildAttention(scope, c, o, h);
  if (failed(attn))
    return failure();
  x = g.ewise(EwiseKind::add, {x, residual(*attn)});
  Value h2 = norm("post_attention_layernorm", x);
  return g.ewise(EwiseKind::add,
                 {x, residual(buildFeedForward(scope, c, h2, moe))});
}

/// `@layer`: one decoder layer from hidden states to hidden states, the
/// unit that a frontend's exported block is compared with.
static OwningOpRef<ModuleOp> buildSingleLayer(MLIRContext *ctx, Location loc,
                                              ModelConfig c,
                                              const BuildOptions &o) {
  c.layers = 1;
  if (c.moe) {
    c.moe->firstDenseLayers = 0;
    c.moe->layerFrequency = 1;
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
  SmallVector<LayerRun> runs = getLayerRuns(c);
  LayerScope scope(b, loc, runs.front().count, runs.front().prefix, act, x);
  FailureOr<Value> out = buildLayer(scope, c, o, runs.front().moe);
  if (failed(out))
    return {};
  func::ReturnOp::create(b, loc, scope.finish(*out));
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
  if (o.dropout && c.embeddingDropout > 0)
    x = g.dropout(x);

  SmallVector<LayerRun> runs = getLayerRuns(c);
  for (const LayerRun &run : runs) {
    LayerScope scope(b, loc, run.count, run.prefix, act, x);
    FailureOr<Value> out = buildLayer(scope, c, o, run.moe);
    if (failed(out))
      return {};
    x = scope.finish(*out);
  }

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
  Value loss = g.crossEntropy(logits, labels, f32);
  func::ReturnOp::create(b, loc, loss);

  setModuleBindings(*module, getBindings(c, o, runs));
  setModelInfo(*module, c.architecture, c.maxPositions);
  return module;
}
