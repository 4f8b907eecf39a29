//===- Recompute.cpp - Marking the activations the backward recomputes ----===//

#include "Stage/Transforms/Passes.h"

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"

namespace mlir::stage {
#define GEN_PASS_DEF_STAGERECOMPUTE
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;

/// The attribute importers put on the ops of an unfused attention core.
static constexpr llvm::StringLiteral kAttentionCoreAttrName =
    "stage.attention_core";

namespace {
struct RecomputePass
    : mlir::stage::impl::StageRecomputeBase<RecomputePass> {
  using StageRecomputeBase::StageRecomputeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (policy != "none" && policy != "selective" && policy != "full") {
      emitOptionError(module) << "stage-recompute: unknown policy '" << policy
                              << "'; expected none, selective or full";
      return signalPassFailure();
    }
    WalkResult trained = module.walk([](MicrobatchesOp op) {
      op.emitError("stage-recompute must run before stage-autodiff: this "
                   "program is already a training step");
      return WalkResult::interrupt();
    });
    if (trained.wasInterrupted())
      return signalPassFailure();
    UnitAttr mark = UnitAttr::get(&getContext());
    module.walk([&](Operation *op) {
      if (!isa<CostOpInterface>(op))
        return;
      bool inLayer = isa_and_nonnull<RepeatOp>(op->getParentOp());
      bool core = isa<AttentionOp>(op) || op->hasAttr(kAttentionCoreAttrName);
      if ((policy == "full" && inLayer) || (policy == "selective" && core))
        op->setAttr(kRecomputableAttrName, mark);
    });
    // The outputs of a selectively recomputed core are stored anyway.
    if (policy == "selective")
      module.walk([&](Operation *op) {
        if (!op->hasAttr(kRecomputableAttrName))
          return;
        for (Operation *user : op->getUsers())
          if (!user->hasAttr(kRecomputableAttrName)) {
            op->setAttr(kKeepResultAttrName, mark);
            return;
          }
      });
  }
};
} // namespace
