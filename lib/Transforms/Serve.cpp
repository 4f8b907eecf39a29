//===- Serve.cpp - Forward graphs to serving programs ---------------------===//
//
// A forward program becomes the serving of a batch of requests: weights and
// KV caches outside, a `stage.serve` op with the prefill of one micro-batch
// of requests and its decode steps (docs/Inference.md).
//
//===----------------------------------------------------------------------===//

#include "Stage/Transforms/Passes.h"

#include "FunctionInputs.h"
#include "PlanSetup.h"
#include "ServeProgram.h"
#include "Stage/Dialect/Stage/IR/StageTypeRewriting.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageBuilder.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::stage {
#define GEN_PASS_DEF_STAGESERVE
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

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
    Operation *program = body.getParentOp();
    bool decodes = o.decodeSteps > 0;
    if (c.latent >= 0) {
      if (o.chunk)
        return c.op.emitOpError("stage-serve: chunked prefill of latent "
                                "attention is not supported yet");
      // Per token: the latent and the rotary key, one shared head.
      const LatentAttention &l = f.latents[c.latent];
      auto lt = cast<SymTensorType>(l.latent.getType());
      auto rt = cast<SymTensorType>(l.keyRope.getType());
      SmallVector<Expr> dims = {lt.getDim(0), lt.getDim(1), Expr(1),
                                lt.getDims().back() + rt.getDims().back()};
      KVCacheOp::create(
          b, c.op.getLoc(),
          cacheType(c.op, dims, lt.getElementType(), program, decodes),
          c.keyCache, ShardingAttr());
      continue;
    }
    for (auto [name, kv] :
         {std::pair<StringRef, Value>{c.keyCache, c.op.getKey()},
          {c.valueCache, c.op.getValue()}}) {
      auto t = cast<SymTensorType>(kv.getType());
      if (t.getRank() < 2 || t.getDim(1) != Expr::symbol("S"))
        return c.op.emitOpError("stage-serve: keys and values need the prompt "
                                "length S as their dimension 1, got ")
               << t;
      SmallVector<Expr> dims = t.getDims();
      // Continuous batching: the running requests and the arriving one.
      if (o.chunk)
        dims[0] = Expr::symbol("B") + Expr(1);
      KVCacheOp::create(
          b, c.op.getLoc(),
          cacheType(c.op, dims, t.getElementType(), program, decodes), name,
          ShardingAttr());
    }
  }

  // The states of the recurrences, one cache each.
  for (const CarriedState &s : f.states) {
    if (o.chunk)
      return s.op->emitOpError(
          "stage-serve: continuous batching of state-space layers is not "
          "supported yet (a mixed batch would run one scan across requests)");
    KVCacheOp::create(b, s.op->getLoc(),
                      stateCacheType(s.op, body.getParentOp()), s.cache,
                      ShardingAttr());
  }

  sym::Substitution perMicrobatch;
  if (o.microBatches > 1)
    perMicrobatch["B"] = Expr::symbol("B").divExact(Expr::symbol("M"));
  auto serve = ServeOp::create(
      b, loc,
      ExprAttr::get(ctx, o.microBatches > 1 ? Expr::symbol("M") : Expr(1)),
      o.chunk ? ExprAttr::get(ctx, Expr::symbol("C")) : ExprAttr(),
      o.handoff);

  if (o.chunk) {
    if (failed(buildMixedIterations(serve, f, o, grid)))
      return failure();
  } else if (o.prefill) {
    Block *block = new Block();
    serve.getPrefill().push_back(block);
    IRMapping map;
    YieldOp yield = cloneForward(*block, f, map, {perMicrobatch});
    writeCaches(f, map, Expr(0), false);
    carryStates(f, map);
    if (last) {
      FailureOr<Value> token =
          sampleToken(cast<EinsumOp>(map.lookup(f.head.getOperation())),
                      map.lookup(f.logits),
                      SampledPositions{Expr::symbol("S"),
                                       Expr::symbol("S") - Expr(1), Expr(1)});
      if (failed(token))
        return failure();
      if (o.pipelined && o.decode) {
        OpBuilder at(yield);
        sendToken(at, loc, *token, grid);
      }
    }
  }

  if (o.decode && !o.chunk) {
    // One new token per request; without a pipeline it is carried from
    // step to step, starting from the prefill's.
    bool carried = f.tokens && last && !o.pipelined;
    SmallVector<std::pair<StringRef, Type>> tokenInput;
    if (carried) {
      Expr batch = o.microBatches > 1
                       ? Expr::symbol("B").divExact(Expr::symbol("M"))
                       : Expr::symbol("B");
      tokenInput.push_back(
          {"next_tokens", SymTensorType::get(ctx, {batch, Expr(1)},
                                             IntegerType::get(ctx, 32))});
    }
    RepeatOp loop = createStepLoop(serve.getDecode(), loc, Expr::symbol("N"),
                                   "i", tokenInput);
    Block *step = &loop.getBodyBlock();
    sym::Substitution oneToken = perMicrobatch;
    oneToken["S"] = Expr(1);
    IRMapping map;
    YieldOp yield = cloneForward(*step, f, map, {oneToken});
    // Attention over the cache: the prompt and the tokens before this one.
    writeCaches(f, map, Expr::symbol("S") + Expr::symbol("i"), true);
    carryStates(f, map);
    if (f.tokens) {
      auto tokens = cast<InputOp>(map.lookup(f.tokens.getOperation()));
      Value source;
      if (carried) {
        source = step->getArgument(0);
      } else {
        OpBuilder rb(tokens);
        source = receiveToken(rb, loc, tokens.getType(), grid);
      }
      tokens.replaceAllUsesWith(source);
      tokens.erase();
    }
    if (last) {
      FailureOr<Value> token =
          sampleToken(cast<EinsumOp>(map.lookup(f.head.getOperation())),
                      map.lookup(f.logits), std::nullopt);
      if (failed(token))
        return failure();
      if (carried)
        yield->setOperands(*token);
      else if (o.pipelined) {
        OpBuilder at(yield);
        sendToken(at, loc, *token, grid);
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
      emitOptionError(module)
          << "stage-serve: decode-tokens=" << int64_t(decodeTokens)
          << " is negative";
      return signalPassFailure();
    }
    std::string which = phase.empty() ? (decodeTokens > 0 ? "both" : "prefill")
                                      : std::string(phase);
    if (which != "prefill" && which != "decode" && which != "both") {
      emitOptionError(module) << "stage-serve: unknown phase '" << phase
                              << "'; expected prefill, decode or both";
      return signalPassFailure();
    }
    o.prefill = which != "decode";
    o.decode = which != "prefill";
    if (o.decode && decodeTokens == 0) {
      emitOptionError(module)
          << "stage-serve: phase=" << which << " needs decode-tokens > 0";
      return signalPassFailure();
    }
    o.handoff = handoff;
    if (handoff && o.prefill == o.decode) {
      emitOptionError(module)
          << "stage-serve: handoff moves the KV cache from a prefill group "
             "to a decode group: give phase=prefill or phase=decode";
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
      return emitOptionError(module)
             << "stage-serve: chunked-prefill=" << int64_t(chunkedPrefill)
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
    if (decodeTokens == 0)
      return emitOptionError(module)
             << "stage-serve: chunked-prefill batches prompt chunks with the "
                "running requests' decode tokens: give decode-tokens (how "
                "many each running request generates)";
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
      (*b)[kReplicatedKVHeads.str()] = *t;
      substituteSymbols(module,
                        {{"KV", Expr::symbol(kReplicatedKVHeads.str())}});
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
