//===- MirroredGradients.cpp - DualPipe's gradient sum across copies ------===//
//
// DualPipe keeps two copies of every stage, one per direction: rank r runs
// stage r of the copy fed from rank 0 and stage pp - 1 - r of the copy fed
// from the last rank. The copies see different micro-batches, so the two
// gradients of a weight are summed before its update: each rank sends its
// copy's gradient to its mirror and adds the one it receives (DeepSeek's
// DualPipe repository sums them so in its example). The exchange follows
// whatever reduction the partitioner gave the gradient, so under ZeRO only
// the data-parallel shard travels.
//
//===----------------------------------------------------------------------===//

#include "Stage/Transforms/Passes.h"

#include "GradientExchange.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::stage {
#define GEN_PASS_DEF_STAGESUMMIRROREDGRADIENTS
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;

static LogicalResult sumMirroredGradients(PipelineOp pipe,
                                          FlatSymbolRefAttr grid) {
  SmallVector<PipelineStageOp> stages = getPipelineStages(pipe);
  int64_t pp = int64_t(stages.size()) / 2;
  // A weight other stages hold too is summed over all its copies, the
  // mirrored ones included, by stage-sum-shared-gradients.
  auto steps = [](PipelineStageOp s) {
    SmallVector<OptimizerStepOp> own;
    for (auto step : s.getBody().front().getOps<OptimizerStepOp>()) {
      auto w = getUpdatedParam(step);
      if (!w || getHoldingStages(w).empty())
        own.push_back(step);
    }
    return own;
  };
  // Stage j's updates and its copy's, checked before anything changes.
  SmallVector<
      std::pair<SmallVector<OptimizerStepOp>, SmallVector<OptimizerStepOp>>>
      pairs;
  for (int64_t j = 0; j < pp; ++j) {
    auto &[first, mirror] =
        pairs.emplace_back(steps(stages[j]), steps(stages[pp + j]));
    if (first.size() != mirror.size())
      return stages[pp + j].emitOpError("updates ")
             << mirror.size() << " weights where its mirrored stage " << j
             << " updates " << first.size();
    for (auto [a, m] : llvm::zip(first, mirror))
      if (a.getGrad().getType() != m.getGrad().getType())
        return m.emitOpError("updates a gradient of type ")
               << m.getGrad().getType() << " where its mirrored copy has "
               << a.getGrad().getType();
  }
  int64_t channel = getFirstFreeChannel(pipe);
  for (auto [j, pair] : llvm::enumerate(pairs)) {
    // Stage j runs on rank j, its copy on rank pp - 1 - j.
    int64_t shift = pp - 1 - 2 * int64_t(j);
    for (auto [a, m] : llvm::zip(pair.first, pair.second)) {
      OpBuilder ba(a), bm(m);
      addPeerGradients(ba, a, grid, {{shift, channel, channel + 1}});
      addPeerGradients(bm, m, grid, {{-shift, channel + 1, channel}});
      channel += 2;
    }
  }
  return success();
}

namespace {
struct SumMirroredGradientsPass
    : mlir::stage::impl::StageSumMirroredGradientsBase<
          SumMirroredGradientsPass> {
  void runOnOperation() override {
    if (failed(sumOverPipelines(
            getOperation(),
            [](PipelineOp pipe) { return isMirrored(pipe.getSchedule()); },
            sumMirroredGradients)))
      signalPassFailure();
  }
};
} // namespace
