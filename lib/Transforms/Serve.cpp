//===- Serve.cpp - Forward graphs to serving programs ---------------------===//
//
// A forward program becomes the serving of a batch of requests: weights and
// KV caches outside, a `stage.serve` op with the prefill of one micro-batch
// of requests and its decode steps (docs/Inference.md).
//
//===----------------------------------------------------------------------===//

#include "Stage/Transforms/Passes.h"

#include "FunctionInputs.h"
#include "LatentAttention.h"
#include "PlanSetup.h"
#include "TypeRewriting.h"

#include "Stage/Analysis/ParameterAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageBuilder.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#include <set>

namespace mlir::stage {
#define GEN_PASS_DEF_STAGESERVE
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

/// The channel of the sampled tokens a pipeline's last stage sends back to
/// its first (0 carries activations forward, 1 their gradients).
static constexpr int64_t kTokenChannel = 2;

namespace {

struct ServeOptions {
  int64_t microBatches = 1;
  /// N: the caches hold S + N positions.
  int64_t decodeSteps = 0;
  bool prefill = true, decode = false;
  /// The program is one stage of a pipeline (pp > 1).
  bool pipelined = false;
  /// Continuous batching: prompt tokens per mixed iteration (0: none).
  int64_t chunk = 0;
};

/// One attention of the forward graph and the caches its keys and values go
/// to: one each, or for latent attention (`latent` >= 0) one cache of the
/// latent and rotary key (`keyCache`).
struct CachedAttention {
  AttentionOp op;
  std::string keyCache, valueCache;
  int latent = -1;
};

/// What the serving program is built from: the forward graph, read once.
struct ForwardProgram {
  SmallVector<Operation *> ops;
  SmallVector<CachedAttention> attentions;
  SmallVector<LatentAttention> latents;
  /// The prompt tokens (the first stage only).
  InputOp tokens;
  /// The op producing the logits (the last stage only): an einsum with the
  /// LM head weight, perhaps followed by elementwise ops up to `logits`.
  EinsumOp head;
  Value logits;
};

} // namespace

static bool isStepOp(Operation *op) {
  return isa<LossOp, CrossEntropyOp>(op);
}

/// The name of the cache a key or value goes to: its projection's weight
/// without `_proj` ("layers.self_attn.k"), else `attention<n>.<kind>`.
static std::string cacheName(Value v, size_t index, StringRef kind,
                             std::set<std::string> &used) {
  std::string name;
  for (Operation *def = v.getDefiningOp(); def && name.empty();) {
    if (auto e = dyn_cast<EinsumOp>(def)) {
      for (Value in : e.getInputs())
        if (ParamOp p = getSourceParam(in)) {
          name = p.getName().str();
          break;
        }
      break;
    }
    if (def->getNumOperands() == 0)
      break;
    def = def->getOperand(0).getDefiningOp();
  }
  if (StringRef(name).ends_with("_proj"))
    name.resize(name.size() - 5);
  if (name.empty() || used.count(name))
    name = "attention" + std::to_string(index) + "." + kind.str();
  used.insert(name);
  return name;
}

/// Reads the forward graph: which ops move into the serving regions, its
/// attentions, its prompt tokens and its LM head. Removes the loss.
static FailureOr<ForwardProgram> readForward(Block &body, Operation *terminator) {
  ForwardProgram f;
  FailureOr<SmallVector<LatentAttention>> latents = splitLatentAttentions(body);
  if (failed(latents))
    return failure();
  f.latents = std::move(*latents);
  CrossEntropyOp ce;
  bool softmax = false;
  for (Operation &op : body.without_terminator()) {
    if (isa<MicrobatchesOp, OptimizerStepOp, ServeOp>(op))
      return op.emitOpError("is already part of a training or serving "
                            "program");
    if (auto p = dyn_cast<ParamOp>(op)) {
      if (p.getKind() != ParamKind::weight && p.getKind() != ParamKind::buffer)
        return p.emitOpError("is an optimizer state: serving takes a forward "
                             "graph");
      continue;
    }
    if (auto c = dyn_cast<CrossEntropyOp>(op))
      ce = c;
    if (auto in = dyn_cast<InputOp>(op); in && in.getName() == "tokens")
      f.tokens = in;
    f.ops.push_back(&op);
  }
  std::set<std::string> used;
  body.walk([&](Operation *op) {
    softmax |= isa<SoftmaxOp>(op);
    if (auto a = dyn_cast<AttentionOp>(op)) {
      size_t n = f.attentions.size();
      auto l = llvm::find_if(f.latents, [&](const LatentAttention &l) {
        return l.op == a;
      });
      if (l == f.latents.end()) {
        f.attentions.push_back({a, cacheName(a.getKey(), n, "k", used),
                                cacheName(a.getValue(), n, "v", used)});
        return;
      }
      // The latent's cache sits next to the attention's weights.
      std::string name;
      if (ParamOp p = getSourceParam(l->keyUp)) {
        StringRef w = p.getName();
        w = w.rsplit('.').first; // the split-off part
        name = (w.rsplit('.').first + ".kv_latent").str();
      }
      if (name.empty() || used.count(name))
        name = "attention" + std::to_string(n) + ".kv_latent";
      used.insert(name);
      f.attentions.push_back({a, name, "", int(l - f.latents.begin())});
    }
  });
  if (f.attentions.empty() && softmax)
    return terminator->emitError(
        "stage-serve: the attention is unfused (a softmax of einsums); a KV "
        "cache needs stage.attention: import with --attention=fused");
  if (ce) {
    // The logits: an einsum with a weight, perhaps through elementwise ops.
    Value logits = ce.getLogits();
    Operation *def = logits.getDefiningOp();
    while (def && isa<EwiseOp>(def) && def->getNumOperands() == 1)
      def = def->getOperand(0).getDefiningOp();
    auto head = dyn_cast_or_null<EinsumOp>(def);
    if (!head || head.getInputs().size() != 2)
      return ce.emitOpError("reads logits that are not an einsum with the LM "
                            "head weight; stage-serve cannot sample from them");
    f.head = head;
    f.logits = logits;
    // The loss goes, with what only it read (the labels); a function
    // returning it returns nothing.
    SmallVector<Operation *> dead;
    for (Operation *user : ce->getUsers())
      if (user != terminator)
        dead.push_back(user);
    dead.push_back(ce);
    Value labels = ce.getLabels();
    for (OpOperand &use : llvm::make_early_inc_range(ce->getUses()))
      if (use.getOwner() == terminator)
        terminator->eraseOperand(use.getOperandNumber());
    for (Operation *op : dead) {
      llvm::erase(f.ops, op);
      op->dropAllUses();
      op->erase();
    }
    if (Operation *l = labels.getDefiningOp(); l && l->use_empty()) {
      llvm::erase(f.ops, l);
      l->erase();
    }
  }
  for (Operation *op : f.ops)
    if (isStepOp(op))
      return op->emitOpError("is part of the loss: stage-serve removes the "
                             "loss with its cross-entropy only");
  return f;
}

/// The dimension of `v`'s type that is the prompt length S.
static FailureOr<int64_t> sequenceDim(Value v, Operation *at) {
  auto t = cast<SymTensorType>(v.getType());
  for (unsigned d = 0; d < t.getRank(); ++d)
    if (t.getDim(d) == Expr::symbol("S"))
      return int64_t(d);
  return at->emitOpError("stage-serve: operand type ")
         << t << " has no dimension S (the prompt length)";
}

/// The cache of one attention's keys or values (entries of `entry` dims,
/// positions at 1): S + N positions (S without decode steps, which context
/// parallelism splits), stacked over the layer stacks it runs in.
static SymTensorType cacheType(AttentionOp a, ArrayRef<Expr> entry,
                               Type elementType, Operation *program,
                               bool decodes) {
  SmallVector<Expr> dims(entry.begin(), entry.end());
  dims[1] = decodes ? Expr::symbol("S") + Expr::symbol("N") : Expr::symbol("S");
  SmallVector<Expr> stack;
  for (Operation *p = a->getParentOp(); p && p != program; p = p->getParentOp())
    if (auto rep = dyn_cast<RepeatOp>(p))
      stack.insert(stack.begin(), rep.getCount().getValue());
  if (stack.empty())
    stack.push_back(Expr(1));
  stack.append(dims.begin(), dims.end());
  return SymTensorType::get(a.getContext(), stack, elementType);
}

/// Writes the keys and values of every attention of the forward graph (its
/// clone in a region, through `map`) into their caches at `offset`, and
/// lets attention read the cache so far; a decode step's latent attention
/// takes the absorbed form.
static void writeCaches(const ForwardProgram &f, IRMapping &map,
                        const Expr &offset, bool decode) {
  for (const CachedAttention &cached : f.attentions) {
    auto a = cast<AttentionOp>(
        map.lookup(const_cast<AttentionOp &>(cached.op).getOperation()));
    OpBuilder b(a);
    MLIRContext *ctx = a.getContext();
    auto write = [&](Value v, StringRef name) {
      auto t = cast<SymTensorType>(v.getType());
      SmallVector<Expr> dims = t.getDims();
      dims[1] = offset + dims[1];
      return CacheWriteOp::create(b, a.getLoc(), t.withDims(dims), v, name, 1,
                                  ExprAttr::get(ctx, offset));
    };
    if (cached.latent >= 0) {
      const LatentAttention &l = f.latents[cached.latent];
      LatentAttention m{a,
                        map.lookupOrDefault(l.queryNope),
                        map.lookupOrDefault(l.queryRope),
                        map.lookupOrDefault(l.latent),
                        map.lookupOrDefault(l.keyRope),
                        map.lookupOrDefault(l.keyUp),
                        map.lookupOrDefault(l.valueUp)};
      Value view = write(buildLatentEntry(b, a.getLoc(), m.latent, m.keyRope),
                         cached.keyCache);
      // The prompt's attention runs on its own keys and values.
      if (decode)
        absorbLatentAttention(a, m, view);
      continue;
    }
    for (auto [index, name] : {std::pair<unsigned, StringRef>{1, cached.keyCache},
                               {2, cached.valueCache}})
      a->setOperand(index, write(a->getOperand(index), name));
    // One new position attends to all cached ones.
    if (decode)
      a.setCausal(false);
  }
}

/// The positions the LM head samples from: `size` of them from `offset`
/// along the dimension of extent `extent`.
struct SampledPositions {
  Expr extent, offset, size;
};

/// Greedy sampling after the (cloned) LM head: a top-1 over the vocabulary,
/// the token ids. With `window`, the head first takes those positions only
/// (a prompt's last, a mixed batch's decode tokens).
static FailureOr<Value> sampleToken(EinsumOp head, Value logits,
                                    std::optional<SampledPositions> window) {
  OpBuilder b(head);
  GraphBuilder g(b, head.getLoc());
  if (window) {
    int activation = getSourceParam(head.getInputs()[0]) ? 1 : 0;
    Value x = head.getInputs()[activation];
    auto xt = cast<SymTensorType>(x.getType());
    auto seq = llvm::find(xt.getDims(), window->extent);
    if (seq == xt.getDims().end())
      return head.emitOpError("stage-serve: the LM head's input ")
             << xt << " has no dimension " << window->extent.str();
    int64_t dim = seq - xt.getDims().begin();
    head->setOperand(activation, g.slice(x, dim, window->offset, window->size));
    // The head and the elementwise ops after it see those positions only.
    for (Operation *op = logits.getDefiningOp();; op = op->getOperand(0).getDefiningOp()) {
      auto t = cast<SymTensorType>(op->getResult(0).getType());
      SmallVector<Expr> dims = t.getDims();
      dims[dim] = window->size;
      op->getResult(0).setType(t.withDims(dims));
      if (op == head.getOperation())
        break;
    }
  }
  b.setInsertionPointAfter(logits.getDefiningOp());
  auto lt = cast<SymTensorType>(logits.getType());
  Type i32 = b.getI32Type();
  auto [weights, ids] = g.topk(logits, Expr(1), lt.getElementType());
  (void)weights;
  SmallVector<Expr> dims = lt.getDims();
  dims.pop_back();
  Value token = g.reshape(ids, dims);
  if (cast<SymTensorType>(token.getType()).getElementType() != i32)
    token = g.cast(token, i32);
  return token;
}

/// Clones the forward ops to the end of `block` (before nothing).
static void cloneInto(Block &block, ArrayRef<Operation *> ops, IRMapping &map) {
  OpBuilder b = OpBuilder::atBlockEnd(&block);
  for (Operation *op : ops)
    b.clone(*op, map);
}

/// Continuous batching with chunked prefill: the decode region holds J =
/// S/C mixed iterations. Each runs the projections and MLPs on B + C tokens
/// at once (one token of each running request, then chunk j of an arriving
/// prompt); attention is split by part: the B decode tokens attend to
/// their caches of T + 1 positions, the chunk causally to the (j + 1) C
/// positions of its prompt so far. Only the decode tokens are sampled; in
/// a pipeline they go back to the first stage.
static LogicalResult buildMixedIterations(ServeOp serve, ForwardProgram &f,
                                          const ServeOptions &o, GridOp grid) {
  MLIRContext *ctx = serve.getContext();
  Location loc = serve.getLoc();
  Block *block = new Block();
  serve.getDecode().push_back(block);
  OpBuilder db = OpBuilder::atBlockEnd(block);
  auto loop = RepeatOp::create(db, loc, TypeRange{},
                               ExprAttr::get(ctx, Expr::symbol("J")),
                               UnitAttr(), StringAttr::get(ctx, "j"),
                               ValueRange{}, ValueRange{});
  Block *step = new Block();
  loop.getBody().push_back(step);
  YieldOp::create(db, loc);
  IRMapping map;
  cloneInto(*step, f.ops, map);
  OpBuilder sb = OpBuilder::atBlockEnd(step);
  auto yield = YieldOp::create(sb, loc);
  // One flattened batch of B + C tokens (through a fresh symbol, so that
  // the B of B + C is not replaced by the 1).
  Expr B = Expr::symbol("B"), C = Expr::symbol("C");
  for (Operation &op : *step) {
    substituteSymbols(&op, {{"B", Expr(1)}, {"S", Expr::symbol("stage.tokens")}});
    substituteSymbols(&op, {{"stage.tokens", B + C}});
  }
  Expr T = Expr::symbol("T"), j = Expr::symbol("j");
  for (const CachedAttention &cached : f.attentions) {
    auto a = cast<AttentionOp>(
        map.lookup(const_cast<AttentionOp &>(cached.op).getOperation()));
    OpBuilder b(a);
    GraphBuilder g(b, a.getLoc());
    auto part = [&](Value v, bool decode) {
      Value p = decode ? g.slice(v, 1, Expr(0), B) : g.slice(v, 1, B, C);
      if (!decode)
        return p;
      SmallVector<Expr> dims = GraphBuilder::typeOf(p).getDims();
      std::swap(dims[0], dims[1]); // [1, B, ...] -> [B, 1, ...]
      return g.reshape(p, dims);
    };
    auto write = [&](Value v, StringRef name, const Expr &offset) -> Value {
      auto t = GraphBuilder::typeOf(v);
      SmallVector<Expr> dims = t.getDims();
      dims[1] = offset + dims[1];
      return CacheWriteOp::create(b, a.getLoc(), t.withDims(dims), v, name, 1,
                                  ExprAttr::get(ctx, offset));
    };
    Value q = a.getQuery(), k = a.getKey(), v = a.getValue();
    Value decoded = g.attention(part(q, true),
                                write(part(k, true), cached.keyCache, T),
                                write(part(v, true), cached.valueCache, T),
                                /*causal=*/false);
    Value chunk = g.attention(part(q, false),
                              write(part(k, false), cached.keyCache, j * C),
                              write(part(v, false), cached.valueCache, j * C),
                              /*causal=*/true);
    SmallVector<Expr> dims = GraphBuilder::typeOf(decoded).getDims();
    std::swap(dims[0], dims[1]);
    Value joined = g.concat({g.reshape(decoded, dims), chunk}, 1);
    a.replaceAllUsesWith(joined);
    a.erase();
  }
  bool last = bool(f.head);
  if (f.tokens && o.pipelined) {
    // The running requests' tokens come back from the last stage; the
    // chunk's are the prompt's.
    auto tokens = cast<InputOp>(map.lookup(f.tokens.getOperation()));
    OpBuilder rb(tokens);
    GraphBuilder g(rb, loc);
    Type i32 = rb.getI32Type();
    auto r = RecvOp::create(rb, loc, g.tensor({Expr(1), B}, i32),
                            FlatSymbolRefAttr::get(grid),
                            rb.getStrArrayAttr({"pp"}), rb.getI64IntegerAttr(-1),
                            rb.getI64IntegerAttr(kTokenChannel));
    markTokenFeedback(r);
    Value prompt = g.input("prompt_chunk", {Expr(1), C}, i32);
    tokens.replaceAllUsesWith(g.concat({r, prompt}, 1));
    tokens.erase();
  }
  if (last) {
    FailureOr<Value> token = sampleToken(
        cast<EinsumOp>(map.lookup(f.head.getOperation())),
        map.lookup(f.logits), SampledPositions{B + C, Expr(0), B});
    if (failed(token))
      return failure();
    if (o.pipelined) {
      OpBuilder at(yield);
      auto s = SendOp::create(at, loc, *token, FlatSymbolRefAttr::get(grid),
                              at.getStrArrayAttr({"pp"}),
                              at.getI64IntegerAttr(1),
                              at.getI64IntegerAttr(kTokenChannel));
      markTokenFeedback(s);
    }
  }
  return success();
}

/// Rewrites one forward program (the ops of `body` before `terminator`).
static LogicalResult serveProgram(Block &body, Operation *terminator,
                                  const ServeOptions &o, GridOp grid) {
  MLIRContext *ctx = terminator->getContext();
  Location loc = terminator->getLoc();
  FailureOr<ForwardProgram> read = readForward(body, terminator);
  if (failed(read))
    return failure();
  ForwardProgram &f = *read;
  bool last = bool(f.head);

  // The caches, next to the weights.
  OpBuilder b(terminator);
  for (CachedAttention &c : f.attentions) {
    if (c.latent >= 0) {
      // Per token: the latent and the rotary key, one shared head.
      const LatentAttention &l = f.latents[c.latent];
      auto lt = cast<SymTensorType>(l.latent.getType());
      auto rt = cast<SymTensorType>(l.keyRope.getType());
      SmallVector<Expr> dims = {lt.getDim(0), lt.getDim(1), Expr(1),
                                lt.getDims().back() + rt.getDims().back()};
      if (o.chunk)
        return c.op.emitOpError("stage-serve: chunked prefill of latent "
                                "attention is not supported yet");
      KVCacheOp::create(b, c.op.getLoc(),
                        cacheType(c.op, dims, lt.getElementType(),
                                  body.getParentOp(), o.decodeSteps > 0),
                        c.keyCache);
      continue;
    }
    for (auto [name, kv] : {std::pair<StringRef, Value>{c.keyCache, c.op.getKey()},
                            {c.valueCache, c.op.getValue()}}) {
      if (cast<SymTensorType>(kv.getType()).getRank() < 2 ||
          cast<SymTensorType>(kv.getType()).getDim(1) != Expr::symbol("S"))
        return c.op.emitOpError("stage-serve: keys and values need the prompt "
                                "length S as their dimension 1, got ")
               << kv.getType();
      auto t = cast<SymTensorType>(kv.getType());
      SmallVector<Expr> dims = t.getDims();
      // Continuous batching: the running requests and the arriving one.
      if (o.chunk)
        dims[0] = Expr::symbol("B") + Expr(1);
      KVCacheOp::create(b, c.op.getLoc(),
                        cacheType(c.op, dims, t.getElementType(),
                                  body.getParentOp(), o.decodeSteps > 0),
                        name);
    }
  }

  sym::Substitution perMicrobatch;
  if (o.microBatches > 1)
    perMicrobatch["B"] = Expr::symbol("B").divExact(Expr::symbol("M"));
  auto serve = ServeOp::create(
      b, loc,
      ExprAttr::get(ctx, o.microBatches > 1 ? Expr::symbol("M") : Expr(1)),
      o.chunk ? ExprAttr::get(ctx, Expr::symbol("C")) : ExprAttr());
  auto sendToken = [&](OpBuilder &at, Value token) {
    auto s = SendOp::create(at, loc, token, FlatSymbolRefAttr::get(grid),
                            at.getStrArrayAttr({"pp"}), at.getI64IntegerAttr(1),
                            at.getI64IntegerAttr(kTokenChannel));
    markTokenFeedback(s);
  };

  if (o.chunk) {
    if (failed(buildMixedIterations(serve, f, o, grid)))
      return failure();
  } else if (o.prefill) {
    Block *block = new Block();
    serve.getPrefill().push_back(block);
    IRMapping map;
    cloneInto(*block, f.ops, map);
    OpBuilder yb = OpBuilder::atBlockEnd(block);
    YieldOp::create(yb, loc);
    for (Operation &op : *block)
      substituteSymbols(&op, perMicrobatch);
    writeCaches(f, map, Expr(0), false);
    if (last) {
      FailureOr<Value> token = sampleToken(
          cast<EinsumOp>(map.lookup(f.head.getOperation())),
          map.lookup(f.logits),
          SampledPositions{Expr::symbol("S"), Expr::symbol("S") - Expr(1),
                           Expr(1)});
      if (failed(token))
        return failure();
      if (o.pipelined && o.decode) {
        OpBuilder at(block->getTerminator());
        sendToken(at, *token);
      }
    }
  }

  if (o.decode && !o.chunk) {
    Block *block = new Block();
    serve.getDecode().push_back(block);
    OpBuilder db = OpBuilder::atBlockEnd(block);
    GraphBuilder g(db, loc);
    // One new token per request; without a pipeline it is carried from
    // step to step.
    Value first;
    bool carried = f.tokens && last && !o.pipelined;
    Expr batch = o.microBatches > 1
                     ? Expr::symbol("B").divExact(Expr::symbol("M"))
                     : Expr::symbol("B");
    if (carried)
      first = g.input("next_tokens", {batch, Expr(1)}, db.getI32Type());
    auto loop = RepeatOp::create(
        db, loc, carried ? TypeRange{first.getType()} : TypeRange{},
        ExprAttr::get(ctx, Expr::symbol("N")), UnitAttr(),
        StringAttr::get(ctx, "i"), carried ? ValueRange{first} : ValueRange{},
        ValueRange{});
    Block *step = new Block();
    loop.getBody().push_back(step);
    if (carried)
      step->addArgument(first.getType(), loc);
    YieldOp::create(db, loc);
    IRMapping map;
    cloneInto(*step, f.ops, map);
    OpBuilder sb = OpBuilder::atBlockEnd(step);
    auto yield = YieldOp::create(sb, loc);
    sym::Substitution oneToken = perMicrobatch;
    oneToken["S"] = Expr(1);
    for (Operation &op : *step)
      substituteSymbols(&op, oneToken);
    // Attention over the cache: the prompt and the tokens before this one.
    writeCaches(f, map, Expr::symbol("S") + Expr::symbol("i"), true);
    if (f.tokens) {
      auto tokens = cast<InputOp>(map.lookup(f.tokens.getOperation()));
      Value source;
      if (carried) {
        source = step->getArgument(0);
      } else {
        OpBuilder rb(tokens);
        auto r = RecvOp::create(rb, loc, tokens.getType(),
                                FlatSymbolRefAttr::get(grid),
                                rb.getStrArrayAttr({"pp"}),
                                rb.getI64IntegerAttr(-1),
                                rb.getI64IntegerAttr(kTokenChannel));
        markTokenFeedback(r);
        source = r;
      }
      tokens.replaceAllUsesWith(source);
      tokens.erase();
    }
    if (last) {
      FailureOr<Value> token = sampleToken(
          cast<EinsumOp>(map.lookup(f.head.getOperation())),
          map.lookup(f.logits), std::nullopt);
      if (failed(token))
        return failure();
      if (carried)
        yield->setOperands(*token);
      else if (o.pipelined) {
        OpBuilder at(yield);
        sendToken(at, *token);
      }
    }
  }

  // The forward ops are now in the regions.
  for (Operation *op : llvm::reverse(f.ops)) {
    op->dropAllUses();
    op->erase();
  }
  return success();
}

namespace {
struct ServePass : mlir::stage::impl::StageServeBase<ServePass> {
  using StageServeBase::StageServeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    ServeOptions o;
    o.microBatches = microBatches;
    o.decodeSteps = decodeTokens;
    if (decodeTokens < 0) {
      emitOptionError(module) << "stage-serve: decode-tokens="
                              << int64_t(decodeTokens) << " is negative";
      return signalPassFailure();
    }
    std::string which =
        phase.empty() ? (decodeTokens > 0 ? "both" : "prefill")
                      : std::string(phase);
    if (which != "prefill" && which != "decode" && which != "both") {
      emitOptionError(module) << "stage-serve: unknown phase '" << phase
                              << "'; expected prefill, decode or both";
      return signalPassFailure();
    }
    o.prefill = which != "decode";
    o.decode = which != "prefill";
    if (o.decode && decodeTokens == 0) {
      emitOptionError(module) << "stage-serve: phase=" << which
                              << " needs decode-tokens > 0";
      return signalPassFailure();
    }
    o.chunk = chunkedPrefill;
    if (o.chunk && failed(checkChunking(module)))
      return signalPassFailure();
    FailureOr<int64_t> context = getRequestedDegree(module, "cp", cp);
    if (failed(context))
      return signalPassFailure();
    if (*context > 1 && o.decode) {
      emitOptionError(module)
          << "stage-serve: cp=" << *context
          << " splits the prompt, and a decode step has one position: "
             "serve the prefill alone (phase=prefill), or decode without cp";
      return signalPassFailure();
    }
    if (failed(bindSymbols(module)))
      return signalPassFailure();
    GridOp grid = getGrid(module);
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (fn.isExternal())
        continue;
      auto pipes = fn.getBody().front().getOps<PipelineOp>();
      if (!pipes.empty()) {
        PipelineOp pipe = *pipes.begin();
        if (pipe.getVirtualStages() != 1) {
          pipe.emitError("stage-serve: a serving pipeline has one chunk per "
                         "stage (virtual stages ")
              << pipe.getVirtualStages() << ")";
          return signalPassFailure();
        }
        o.pipelined = pipe.getNumPhysicalStages() > 1;
        pipe.setSchedule(ScheduleKind::gpipe);
        for (PipelineStageOp st : getPipelineStages(pipe)) {
          Block &body = st.getBody().front();
          if (failed(serveProgram(body, body.getTerminator(), o, grid)))
            return signalPassFailure();
        }
        continue;
      }
      convertArgumentsToInputs(fn);
      Block &entry = fn.getBody().front();
      Operation *ret = entry.getTerminator();
      if (failed(serveProgram(entry, ret, o, grid)))
        return signalPassFailure();
      OpBuilder b(ret);
      func::ReturnOp::create(b, ret->getLoc());
      ret->erase();
      fn.setFunctionType(FunctionType::get(&getContext(), {}, {}));
    }
  }

  /// Continuous batching serves one replica's running requests: the
  /// flattened batch cannot be split over data-parallel ranks.
  LogicalResult checkChunking(ModuleOp module) {
    if (chunkedPrefill < 0)
      return emitOptionError(module) << "stage-serve: chunked-prefill="
                                     << int64_t(chunkedPrefill)
                                     << " is negative";
    if (!phase.empty())
      return emitOptionError(module) << "stage-serve: chunked-prefill mixes "
                                        "prefill and decode in every "
                                        "iteration: drop phase="
                                     << phase;
    for (StringRef axis : {"dp", "ep"}) {
      FailureOr<int64_t> d = getRequestedDegree(module, axis, 0);
      if (failed(d))
        return failure();
      if (*d > 1)
        return emitOptionError(module)
               << "stage-serve: chunked-prefill batches one replica's "
                  "requests, and "
               << axis << "=" << *d
               << " would split them: model one replica (replicas are "
                  "independent)";
    }
    if (microBatches != 1)
      return emitOptionError(module) << "stage-serve: chunked-prefill runs "
                                        "one batch per iteration: drop "
                                        "micro-batches";
    return success();
  }

  /// M and N join the module's bindings; M must divide the batch, and the
  /// prompt and its decoded tokens must fit the model's context.
  LogicalResult bindSymbols(ModuleOp module) {
    FailureOr<sym::Bindings> b = getModuleBindings(module);
    if (failed(b))
      return failure();
    if (microBatches < 1)
      return emitOptionError(module) << "stage-serve: micro-batches must be "
                                        "at least 1, got "
                                     << int64_t(microBatches);
    auto batch = b->find("B");
    if (microBatches > 1) {
      if (batch != b->end() && batch->second % microBatches != 0)
        return emitOptionError(module)
               << "stage-serve: micro-batches=" << int64_t(microBatches)
               << " does not divide the batch: B/M = " << batch->second << "/"
               << int64_t(microBatches) << " is not an integer";
      (*b)["M"] = microBatches;
    }
    (*b)["N"] = decodeTokens;
    if (chunkedPrefill > 0) {
      auto s = b->find("S");
      if (s == b->end() || s->second % chunkedPrefill != 0)
        return emitOptionError(module)
               << "stage-serve: chunked-prefill=" << int64_t(chunkedPrefill)
               << " must divide the prompt length S"
               << (s == b->end() ? std::string()
                                 : " = " + std::to_string(s->second));
      (*b)["C"] = chunkedPrefill;
      (*b)["J"] = s->second / chunkedPrefill;
      // The running requests are, on average, half-way through decoding.
      (*b)["T"] = s->second + decodeTokens / 2;
    }
    // More tensor-parallel ranks than KV heads: one KV head per rank.
    FailureOr<int64_t> t = getRequestedDegree(module, "tp", tp);
    if (failed(t))
      return failure();
    auto kv = b->find("KV");
    if (kv != b->end() && *t > kv->second && *t % kv->second == 0) {
      (*b)["KVr"] = *t;
      substituteSymbols(module, {{"KV", Expr::symbol("KVr")}});
    }
    if (auto ctxLen = getModelContextLength(module)) {
      auto s = b->find("S");
      if (s != b->end() && s->second + decodeTokens > *ctxLen)
        return emitOptionError(module)
               << "stage-serve: the prompt and its decoded tokens, S + N = "
               << s->second << " + " << int64_t(decodeTokens) << " = "
               << s->second + decodeTokens
               << ", overflow the model's context of " << *ctxLen
               << " positions (max_position_embeddings)";
    }
    setModuleBindings(module, *b);
    return success();
  }
};
} // namespace
