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
      // A layer's ops: a layer stack's body, or a layer built outside any
      // stack (Zamba2's layers with a shared block).
      bool inLayer = isa_and_nonnull<RepeatOp>(op->getParentOp()) ||
                     getModelLayer(op).has_value();
      bool core = isa<AttentionOp>(op) || isAttentionCore(op);
      if ((kind == RecomputePolicy::full && inLayer) ||
          (kind == RecomputePolicy::selective && core))
        markRecomputable(op);
    });
    // The outputs of a selectively recomputed core are stored anyway, and
    // so are those of a layer outside any stack that go on to another
    // layer (a checkpoint's output is the next layer's stored input, as a
    // stack's carried value is).
    module.walk([&](Operation *op) {
      if (!isRecomputable(op))
        return;
      std::optional<int64_t> layer = getModelLayer(op);
      if (kind != RecomputePolicy::selective && !layer)
        return;
      for (Operation *user : op->getUsers())
        if (!isRecomputable(user) || getModelLayer(user) != layer) {
          markKeepsRecomputedResult(op);
          return;
        }
    });
  }
};
} // namespace
