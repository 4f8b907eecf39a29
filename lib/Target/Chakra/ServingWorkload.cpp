//===- ServingWorkload.cpp - Per-rank-class node lists of serving --------===//
//
// The expander of a `stage.serve` program: the prefill of every group of
// requests in turn, then decode step i of every group for i = 0 .. N-1,
// each step's sizes evaluated with its index bound. A pipeline's stages
// run the same order, so stage p works on group m while stage p + 1 works
// on group m - 1; the sampled tokens a last stage sends back are tagged by
// step, and the one after the last step is not sent.
//
//===----------------------------------------------------------------------===//

#include "ServingWorkload.h"

#include "NodeEmitter.h"

#include "Stage/Analysis/RankClasses.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

/// The piece of `cache` a rank of the class holds.
static FailureOr<CacheShard> readCache(NodeEmitter &e, const Workload &w,
                                       const sym::Bindings &b, KVCacheOp cache) {
  CacheShard c;
  c.name = cache.getName().str();
  SymTensorType type = cache.getResult().getType();
  c.elementBytes = type.getElementBytes();
  ShardingAttr split = cache.getSplitAttr();
  if (!split)
    return cache.emitOpError("has no split: the handoff of a KV cache needs "
                             "the partitioned program (stage-partition)");
  for (auto [dim, axes] : llvm::zip(type.getDims(), split.getDims())) {
    FailureOr<uint64_t> n = e.eval(cache, dim, "cache size");
    if (failed(n))
      return failure();
    c.local.push_back(int64_t(*n));
    SmallVector<int> indices;
    for (Attribute a : axes) {
      auto it = llvm::find(w.axes, cast<StringAttr>(a).getValue().str());
      if (it == w.axes.end())
        return cache.emitOpError("is split over '")
               << cast<StringAttr>(a).getValue() << "', not an axis of the grid";
      indices.push_back(int(it - w.axes.begin()));
    }
    c.split.push_back(indices);
    // KVr cached heads hold copies of the KV distinct ones.
    auto kv = b.find("KV");
    c.distinct.push_back(dim.symbols().count(kReplicatedKVHeads.str()) &&
                                 kv != b.end()
                             ? kv->second
                             : 0);
  }
  return c;
}

/// The token feedback ops of a block (a pipeline's sampled tokens).
static SmallVector<Operation *> feedbackOps(Block &block, bool sends) {
  SmallVector<Operation *> out;
  for (Operation &op : block)
    if (isTokenFeedback(&op) && (sends ? isa<SendOp>(op) : isa<RecvOp>(op)))
      out.push_back(&op);
  return out;
}

FailureOr<ClassTrace>
mlir::stage::chakra::expandServingClass(Workload &w, const sym::Bindings &b,
                                        const DeviceModel *device,
                                        Operation *chunk, ServeOp serve) {
  NodeEmitter e(w, b, device);
  auto count = [&](const sym::Expr &x, StringRef what) {
    return e.eval(serve, x, what);
  };
  FailureOr<uint64_t> groups =
      count(serve.getMicrobatches().getValue(), "serving micro-batches");
  if (failed(groups))
    return failure();
  RepeatOp loop = serve.getDecodeLoop();
  uint64_t steps = 0;
  if (loop) {
    FailureOr<uint64_t> n = count(loop.getCount().getValue(), "decode steps");
    if (failed(n))
      return failure();
    steps = *n;
    if (!w.servingSteps.empty())
      steps = w.servingSteps.size();
  }
  int64_t M = int64_t(*groups);
  w.servingGroups = M;
  // Tags: prefill of group m is m, decode step i of group m is M (i+1) + m.
  e.microbatches = M * int64_t(steps + 1);
  bool handoff = serve.getHandoff();
  std::vector<CacheShard> caches;
  if (handoff)
    for (auto cache : chunk->getRegion(0).front().getOps<KVCacheOp>()) {
      FailureOr<CacheShard> c = readCache(e, w, b, cache);
      if (failed(c))
        return failure();
      caches.push_back(std::move(*c));
    }
  for (Operation &op : chunk->getRegion(0).front())
    if (&op != serve.getOperation() && !isa<ParamOp, KVCacheOp, InputOp>(op) &&
        !op.hasTrait<OpTrait::IsTerminator>())
      if (failed(e.emitOp(&op)))
        return failure();

  // A sampled token sent back is received by the next step of its group.
  e.sendAhead = M;
  bool prefill = !serve.getPrefill().empty();
  if (prefill) {
    Block &region = serve.getPrefill().front();
    for (Operation *op : feedbackOps(region, true))
      e.aheadSends.insert(op);
    e.phase = "prefill";
    for (int64_t m = 0; m < M; ++m) {
      e.stepStart = e.getNumNodes();
      e.microbatch = m;
      if (failed(e.emitBlock(region)))
        return failure();
      e.barrier = e.lastStepNode;
      // The group's cache leaves once its prefill is done here.
      if (handoff)
        e.addHandoff(NodeKind::Send, m, {uint32_t(e.lastStepNode)});
    }
  }
  auto take = [&] {
    ClassTrace t = e.take();
    t.caches = std::move(caches);
    return t;
  };
  if (!loop)
    return take();

  // Decode: the ops around the step loop hold no work (its first token).
  Block &region = serve.getDecode().front();
  for (Operation &op : region)
    if (&op != loop.getOperation() && failed(e.emitOp(&op)))
      return failure();
  // Each group's handed-over cache, received as early as it can come.
  e.phase = "decode";
  SmallVector<int64_t> arrivals(M, -1);
  if (handoff)
    for (int64_t m = 0; m < M; ++m)
      arrivals[m] = e.addHandoff(NodeKind::Recv, m, {});
  Block &body = loop.getBodyBlock();
  auto yield = cast<YieldOp>(body.getTerminator());
  unsigned nCarry = loop.getNumCarried();
  std::vector<SmallVector<Deps>> carried(M);
  for (auto &c : carried)
    for (Value init : loop.getInits())
      c.push_back(e.depsOf(init));
  SmallVector<Operation *> sends = feedbackOps(body, true);
  SmallVector<Operation *> recvs = feedbackOps(body, false);
  e.aheadSends.insert(sends.begin(), sends.end());
  std::string step = loop.getStep()->str();
  sym::Bindings stepBindings = b;
  e.setBindings(stepBindings);
  e.phase = "decode";
  for (uint64_t i = 0; i < steps; ++i) {
    if (!w.servingSteps.empty()) {
      stepBindings = b;
      for (const auto &[k, v] : w.servingSteps[i])
        stepBindings[k] = v;
    }
    stepBindings[step] = int64_t(i);
    e.skipped.clear();
    if (i + 1 == steps)
      e.skipped.insert(sends.begin(), sends.end());
    if (i == 0 && !prefill)
      e.skipped.insert(recvs.begin(), recvs.end());
    for (int64_t m = 0; m < M; ++m) {
      e.stepStart = e.getNumNodes();
      e.microbatch = M * int64_t(i + 1) + m;
      e.arrival = i == 0 ? arrivals[m] : -1;
      for (unsigned c = 0; c < nCarry; ++c)
        e.env[body.getArgument(c)] = Produced{carried[m][c], {}};
      if (failed(e.emitBlock(body)))
        return failure();
      for (unsigned c = 0; c < nCarry; ++c)
        carried[m][c] = e.depsOf(yield.getValues()[c]);
      e.barrier = e.lastStepNode;
    }
  }
  e.arrival = -1;
  e.setBindings(b);
  return take();
}
