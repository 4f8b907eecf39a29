//===- SharedGradients.cpp - Gradients of weights several stages hold -----===//
//
// A weight that several pipeline stages use (a tied embedding: the first
// stage's token table is the last stage's head; Zamba2's shared blocks,
// used at layers of many stages) is a copy in each of them
// (`stage.held_by`), and each copy's gradient covers only its stage's
// uses. The copies take the same step only if they update with the sum:
// Megatron-LM all-reduces a tied embedding's gradient over the group of
// its first and last stage. Here one copy per rank takes part, the rank's
// last chunk (the earlier chunks of an interleaved or V schedule, and
// DualPipe's mirrored stages, hand it theirs in memory): the ranks
// exchange their gradients (one send to and one receive from each other
// rank, then adds: for two ranks the bytes of a two-rank all-reduce) or,
// when every rank of a pipeline of three or more holds one, all-reduce
// them over pp.
//
//===----------------------------------------------------------------------===//

#include "Stage/Transforms/Passes.h"

#include "GradientExchange.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "llvm/ADT/STLExtras.h"

#include <map>

namespace mlir::stage {
#define GEN_PASS_DEF_STAGESUMSHAREDGRADIENTS
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;

namespace {
/// One weight's copies: the updates of each holding stage, by index.
using Holders = std::map<int64_t, OptimizerStepOp>;
/// A weight, by name.
using WeightKey = std::string;
/// A copy's update and how its gradient is summed before it: exchanged with
/// `peers`, then (when one copy per rank covers the pipeline) all-reduced.
struct Update {
  OptimizerStepOp step;
  SmallVector<GradientPeer> peers;
  bool allReduce = false;
};
} // namespace

static LogicalResult sumSharedGradients(PipelineOp pipe,
                                        FlatSymbolRefAttr grid) {
  SmallVector<PipelineStageOp> stages = getPipelineStages(pipe);
  int64_t perCopy = isMirrored(pipe.getSchedule())
                        ? int64_t(stages.size()) / 2
                        : int64_t(stages.size());
  int64_t pp = pipe.getNumPhysicalStages();
  std::map<WeightKey, Holders> weights;
  std::map<WeightKey, SmallVector<int64_t>> listed;
  int64_t copies = int64_t(stages.size()) / perCopy;
  for (auto [s, stage] : llvm::enumerate(stages)) {
    int64_t index = s;
    for (auto step : stage.getBody().front().getOps<OptimizerStepOp>()) {
      auto w = getUpdatedParam(step);
      if (!w || getHoldingStages(w).empty())
        continue;
      WeightKey key = w.getName().str();
      // DualPipe's mirrored stages hold copies too: one sum covers both.
      SmallVector<int64_t> holders;
      for (int64_t copy = 0; copy < copies; ++copy)
        for (int64_t h : getHoldingStages(w))
          holders.push_back(h + copy * perCopy);
      if (!llvm::is_contained(holders, index))
        return w.emitOpError("is held by stages that do not include its own (")
               << index << ")";
      auto [it, fresh] = listed.emplace(key, holders);
      if (!fresh && it->second != holders)
        return w.emitOpError("lists other holding stages than its copy in "
                             "another stage");
      if (!weights[key].emplace(index, step).second)
        return step.emitOpError("updates '")
               << key << "' a second time in stage " << index;
    }
  }
  int64_t channel = getFirstFreeChannel(pipe);
  // Per stage, in the weights' order (the same in every stage, so that the
  // all-reduces over pp are issued in one order): each shared update and
  // how its gradient is summed.
  std::vector<SmallVector<Update>> updates(stages.size());
  for (auto &[key, holders] : weights) {
    SmallVector<int64_t> indices = listed[key];
    for (int64_t h : indices)
      if (!holders.count(h)) {
        OptimizerStepOp some = holders.begin()->second;
        return some.emitOpError("updates '")
               << key << "', which stage " << h
               << " holds too but does not update";
      }
    Type type = holders.begin()->second.getGrad().getType();
    for (auto &[h, step] : holders)
      if (step.getGrad().getType() != type)
        return step.emitOpError("updates a gradient of type ")
               << step.getGrad().getType() << " where another copy has "
               << type;
    // One copy per rank takes part, the rank's last chunk (a rank's
    // chunks run their updates in order: the earlier ones hand it their
    // gradient in memory).
    std::map<int64_t, SmallVector<int64_t>> byRank;
    for (int64_t h : indices)
      byRank[pipe.getPhysicalStage(h)].push_back(h);
    SmallVector<int64_t> reps, repRanks;
    SmallVector<SmallVector<GradientPeer>> local;
    for (auto &[rank, chunks] : byRank) {
      reps.push_back(chunks.back());
      repRanks.push_back(rank);
      SmallVector<GradientPeer> &localPeers = local.emplace_back();
      for (int64_t h : ArrayRef<int64_t>(chunks).drop_back()) {
        updates[h].push_back({holders[h], {{0, channel, -1}}});
        localPeers.push_back({0, -1, channel++});
      }
    }
    int64_t n = reps.size();
    bool everyRank = n == pp && pp > 2;
    // The message from representative a to b: the (a, b)-th ordered pair.
    auto pairChannel = [&](int64_t a, int64_t b) {
      return channel + a * (n - 1) + (b < a ? b : b - 1);
    };
    for (int64_t i = 0; i < n; ++i) {
      SmallVector<GradientPeer> peers = local[i];
      if (!everyRank)
        for (int64_t j = 0; j < n; ++j)
          if (j != i)
            peers.push_back({getRingShift(repRanks[i], repRanks[j], pp),
                             pairChannel(i, j), pairChannel(j, i)});
      updates[reps[i]].push_back({holders[reps[i]], peers, everyRank});
    }
    if (!everyRank)
      channel += n * (n - 1);
  }
  // The shared updates move to the end of their stage, after every
  // gradient they read.
  for (auto [stage, list] : llvm::zip(stages, updates)) {
    Operation *end = stage.getBody().front().getTerminator();
    for (Update &u : list) {
      u.step->moveBefore(end);
      OpBuilder b(u.step);
      addPeerGradients(b, u.step, grid, u.peers);
      if (!u.allReduce)
        continue;
      Value g = u.step.getGrad();
      auto sum = AllReduceOp::create(b, u.step.getLoc(), g.getType(), g, grid,
                                     b.getStrArrayAttr({"pp"}));
      u.step.getGradMutable().assign(sum);
    }
  }
  return success();
}

namespace {
struct SumSharedGradientsPass
    : mlir::stage::impl::StageSumSharedGradientsBase<SumSharedGradientsPass> {
  void runOnOperation() override {
    if (failed(sumOverPipelines(
            getOperation(), [](PipelineOp) { return true; },
            sumSharedGradients)))
      signalPassFailure();
  }
};
} // namespace
