//===- Recompute.cpp - Marking the activations the backward recomputes ----===//

#include "Stage/Transforms/Passes.h"

#include "OptionString.h"

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"

namespace mlir::stage {
#define GEN_PASS_DEF_STAGERECOMPUTE
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;

namespace {
struct RecomputePass
    : mlir::stage::impl::StageRecomputeBase<RecomputePass> {
  using StageRecomputeBase::StageRecomputeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<RecomputePolicy> parsed = parseEnumOption<RecomputePolicy>(
        module, "stage-recompute", "policy", policy,
        getMaxEnumValForRecomputePolicy());
    if (failed(parsed))
      return signalPassFailure();
    RecomputePolicy kind = *parsed;
    WalkResult trained = module.walk([](MicrobatchesOp op) {
      op.emitError("stage-recompute must run before stage-autodiff: this "
                   "program is already a training step");
      return WalkResult::interrupt();
    });
    if (trained.wasInterrupted())
      return signalPassFailure();
    module.walk([&](Operation *op) {
      if (!isa<CostOpInterface>(op))
        return;
      bool inLayer = isa_and_nonnull<RepeatOp>(op->getParentOp());
      bool core = isa<AttentionOp>(op) || isAttentionCore(op);
      if ((kind == RecomputePolicy::full && inLayer) ||
          (kind == RecomputePolicy::selective && core))
        markRecomputable(op);
    });
    // The outputs of a selectively recomputed core are stored anyway.
    if (kind == RecomputePolicy::selective)
      module.walk([&](Operation *op) {
        if (!isRecomputable(op))
          return;
        for (Operation *user : op->getUsers())
          if (!isRecomputable(user)) {
            markKeepsRecomputedResult(op);
            return;
          }
      });
  }
};
} // namespace
