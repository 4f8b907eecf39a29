//===- Workload.cpp - Per-rank-class node lists of a training step --------===//
//
// The schedule expander: for every rank class of the step's structure
// (Analysis/RankClasses.h: which chunks run on which pipeline stage), the
// micro-batch loops run step by step in the pipeline schedule's order
// (Analysis/PipelineSchedule.h), each step's region appended by the
// NodeEmitter; the backward steps report their gradients to the
// GradientBucketer; after the schedule, the iteration's remaining
// reductions and optimizer steps.
//
//===----------------------------------------------------------------------===//

#include "Workload.h"

#include "GradientBuckets.h"
#include "NodeEmitter.h"
#include "ServingWorkload.h"

#include "Stage/Analysis/Bindings.h"
#include "Stage/Analysis/PipelineSchedule.h"
#include "Stage/Analysis/RankClasses.h"
#include "Stage/Analysis/StepTimes.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

/// The trace of one rank class: its chunks' weights, the schedule's steps
/// (`order`), then the iteration's reductions and updates.
static FailureOr<ClassTrace>
expandClass(Workload &w, const sym::Bindings &b, const DeviceModel *device,
            uint64_t bucketBytes, const RankClass &cls,
            const ScheduleShape &shape, ArrayRef<PipelineStep> order,
            OverlapKinds overlap) {
  NodeEmitter e(w, b, device);
  e.overlap = overlap;
  GradientBucketer buckets(e, bucketBytes, overlap.grad);
  e.microbatches = shape.microBatches;
  SmallVector<Block *> chunks;
  for (Operation *op : cls.chunks)
    chunks.push_back(&op->getRegion(0).front());
  // Each chunk: its weights, one micro-batch loop, then the iteration's
  // gradient reductions and optimizer steps.
  SmallVector<MicrobatchesOp> loops;
  for (Block *chunk : chunks) {
    MicrobatchesOp mb = getMicrobatches(chunk->getParentOp());
    loops.push_back(mb);
    for (Operation &op : *chunk) {
      if (&op == mb.getOperation())
        break;
      if (!mb && !isa<ParamOp, InputOp>(op))
        continue;
      if (failed(e.emitOp(&op)))
        return failure();
    }
  }
  auto chunkIndex = [&](int64_t id) {
    for (auto [i, c] : llvm::enumerate(cls.chunkIds))
      if (c == id)
        return int64_t(i);
    return int64_t(-1);
  };
  for (auto [chunk, mb] : llvm::zip(chunks, loops))
    buckets.addChunk(chunk, mb);

  // What each micro-batch's forward keeps for its backward (per layer for
  // stacked activations, so a layer's backward waits for its own), and
  // under a split backward what its input-gradient step leaves for the
  // weight-gradient step.
  std::map<std::pair<int64_t, int64_t>, std::vector<Produced>> kept;
  std::map<std::pair<int64_t, int64_t>, SavedValues> forWeights;
  SmallVector<BackwardSplit> splits;
  for (MicrobatchesOp mb : loops)
    splits.emplace_back(mb);
  // The last node of a pair's first step: the pair's second step does not
  // wait for it, the step after the pair does.
  int64_t pairFirst = -1;
  for (const PipelineStep &step : order) {
    int64_t ci = chunkIndex(step.chunk);
    MicrobatchesOp mb = loops[ci];
    if (!mb)
      continue;
    std::pair<int64_t, int64_t> key{step.chunk, step.microbatch};
    e.stepStart = e.getNumNodes();
    e.microbatch = step.microbatch;
    bool forward = step.isForward();
    bool weights = step.kind == StepKind::WeightGrad;
    e.phase = forward ? "fwd" : weights ? "wgrad" : "bwd";
    Block &region = forward ? mb.getForwardBlock() : mb.getBackwardBlock();
    Operation *yield = region.getTerminator();
    bool split = step.kind == StepKind::InputGrad || weights;
    if (!forward) {
      for (auto [arg, d] : llvm::zip(region.getArguments(), kept[key]))
        e.env[arg] = d;
      ChunkChain chain = getChunkChain(shape, step.chunk);
      buckets.beginBackward(unsigned(ci), yield,
                            step.microbatch == chain.firstBatch,
                            step.microbatch == chain.endBatch - 1);
      e.observer = &buckets;
      if (split) {
        e.split = &splits[ci];
        e.weightStep = weights;
        e.saved = &forWeights[key];
      }
    }
    if (failed(e.emitBlock(region)))
      return failure();
    if (!forward) {
      const BackwardSplit &s = splits[ci];
      auto delivers = [&](Value v) {
        return s.isWeightStepValue(v) == weights;
      };
      if (failed(split ? buckets.endBackward(yield, delivers)
                       : buckets.endBackward(yield)))
        return failure();
      e.observer = nullptr;
      e.split = nullptr;
      e.saved = nullptr;
      if (step.kind != StepKind::InputGrad) {
        kept.erase(key);
        forWeights.erase(key);
      }
    } else {
      std::vector<Produced> out;
      for (Value v : yield->getOperands()) {
        auto it = e.env.find(v);
        out.push_back(it == e.env.end() ? Produced() : it->second);
      }
      kept[key] = std::move(out);
    }
    if (step.pairedWithNext) {
      pairFirst = e.lastStepNode;
      continue;
    }
    e.barrier = e.lastStepNode;
    e.pairBarrier = pairFirst;
    pairFirst = -1;
  }

  // The iteration's remaining reductions and updates, chunk by chunk; a
  // sum across pipeline stages after every message of the schedule.
  for (uint32_t id = 0; id < e.getNumNodes(); ++id)
    if (e.getNode(id).kind == NodeKind::Send)
      e.acrossStagesAfter.push_back(id);
  e.stepStart = e.getNumNodes();
  e.barrier = -1;
  e.pairBarrier = -1;
  e.phase = "opt";
  // The messages after the loop (DualPipe's gradient exchange) are tagged
  // as micro-batch 0's.
  e.microbatch = 0;
  for (auto [ci, chunk] : llvm::enumerate(chunks)) {
    MicrobatchesOp mb = loops[ci];
    if (!mb) {
      // A forward-only program (inference) runs once.
      e.phase = "fwd";
      if (failed(e.emitBlock(*chunk)))
        return failure();
      e.phase = "opt";
      continue;
    }
    bool after = false;
    for (Operation &op : *chunk) {
      if (&op == mb.getOperation()) {
        after = true;
        continue;
      }
      if (after && !buckets.isReducedEarly(&op) && failed(e.emitOp(&op)))
        return failure();
    }
  }
  return e.take();
}

/// The function a trace is written from: one, partitioned, whose every
/// shape is whole under the bindings (`--bind` may rebind a size).
static FailureOr<func::FuncOp> getEmittableFunction(ModuleOp module,
                                                    const sym::Bindings &b) {
  func::FuncOp fn;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal()) {
      if (fn)
        return module.emitError("the module has several functions; trace "
                                "emission takes one training step");
      fn = f;
    }
  if (!fn)
    return module.emitError("the module has no function to emit");
  if (WalkResult r = fn.walk([](Operation *op) {
        if (hasShardingAnnotations(op))
          return WalkResult::interrupt();
        return WalkResult::advance();
      });
      r.wasInterrupted())
    return fn.emitError("still carries sharding annotations: run "
                        "stage-partition before emitting traces");
  if (failed(verifyBindings(fn, b)))
    return failure();
  return fn;
}

FailureOr<Workload>
mlir::stage::chakra::buildWorkload(ModuleOp module, const sym::Bindings &b,
                                   const DeviceModel *device,
                                   uint64_t gradientBucketBytes, bool ioInfo,
                                   const std::vector<sym::Bindings> &servingSteps) {
  Workload w;
  w.ioInfo = ioInfo;
  w.servingSteps = servingSteps;
  w.gpusPerNode = device ? device->gpusPerNode : 0;
  if (GridOp grid = getGrid(module)) {
    for (const std::string &axis : grid.getAxisNames()) {
      auto it = b.find(axis);
      int64_t d = it == b.end() ? 1 : it->second;
      if (d < 1)
        return module.emitError("axis '") << axis << "' has degree " << d;
      w.axes.push_back(axis);
      w.degrees.push_back(d);
      if (axis == "pp")
        w.ppAxis = int(w.axes.size() - 1);
    }
  }
  FailureOr<func::FuncOp> fn = getEmittableFunction(module, b);
  if (failed(fn))
    return failure();

  int64_t pp = w.ppAxis >= 0 ? w.degrees[w.ppAxis] : 1;
  std::shared_ptr<const StepStructure> structure = getStepStructure(*fn);
  const StepStructure &step = *structure;
  auto pipes = fn->getBody().front().getOps<PipelineOp>();
  if (!pipes.empty() && step.stages != pp)
    return (*pipes.begin()).emitOpError("has ")
           << step.stages << " stages per rank group but pp = " << pp;
  if (pipes.empty() && pp != 1)
    return fn->emitError("pp = ")
           << pp << " but the program has no stage.pipeline";
  // Without a pipeline, each micro-batch's forward is followed by its
  // backward: 1F1B on one stage.
  // The schedule as the report states it: a zero-bubble order is planned
  // on the device whose durations the traces carry (the default one
  // without).
  FailureOr<ScheduleShape> shape =
      getScheduleShape(*fn, step, b, device ? *device : getDefaultDevice());
  if (failed(shape))
    return failure();
  if (std::string why = checkSchedule(*shape); !why.empty())
    return fn->emitError(why);
  std::shared_ptr<const StageOrders> orders;
  if (!step.serving)
    orders = getStageSchedules(*shape);

  for (const RankClass &cls : step.classes) {
    if (step.serving) {
      ServeOp serve = getServe(cls.chunks.front());
      if (cls.chunks.size() != 1 || !serve)
        return fn->emitError("a serving program runs one stage.serve per "
                             "pipeline stage");
      FailureOr<ClassTrace> t =
          expandServingClass(w, b, device, cls.chunks.front(), serve);
      if (failed(t))
        return failure();
      w.classes.push_back(std::move(*t));
      continue;
    }
    FailureOr<ClassTrace> t =
        expandClass(w, b, device, gradientBucketBytes, cls, *shape,
                    (*orders)[cls.stage], getOverlap(module));
    if (failed(t))
      return failure();
    w.classes.push_back(std::move(*t));
  }
  // A stack's layers are split over the stages in order.
  std::map<std::string, int64_t> layers;
  for (ClassTrace &c : w.classes)
    for (CacheShard &cache : c.caches) {
      cache.firstLayer = layers[cache.name];
      layers[cache.name] += cache.local[0];
    }
  return w;
}
