//===- Disaggregate.cpp - Prefill and decode on separate rank groups ------===//
//
// The model module becomes two nested modules, @prefill and @decode, each
// served by stage-infer under its own plan with the KV cache handed over
// (stage.serve handoff); the trace emitter numbers the prefill group's
// ranks first and moves the caches between the groups.
//
//===----------------------------------------------------------------------===//

#include "Stage/Transforms/Passes.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"
#include "Stage/Transforms/InferPipeline.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::stage {
#define GEN_PASS_DEF_STAGEDISAGGREGATE
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;

/// `tp=8 dp=2: 16 GPUs`: the degrees of a group's grid and their product.
static int64_t describeGroup(ModuleOp group, std::string &text) {
  FailureOr<sym::Bindings> b = getModuleBindings(group);
  int64_t gpus = 1;
  SmallVector<std::string> split;
  if (GridOp grid = getGrid(group); grid && succeeded(b))
    for (const std::string &axis : grid.getAxisNames()) {
      auto it = b->find(axis);
      int64_t d = it == b->end() ? 1 : it->second;
      gpus *= d;
      if (d > 1)
        split.push_back(axis + "=" + std::to_string(d));
    }
  text = (split.empty() ? std::string("1 GPU") : llvm::join(split, " ")) +
         ": " + std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s");
  return gpus;
}

namespace {
struct DisaggregatePass
    : mlir::stage::impl::StageDisaggregateBase<DisaggregatePass> {
  using StageDisaggregateBase::StageDisaggregateBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!module.getOps<ModuleOp>().empty() || getGrid(module)) {
      emitOptionError(module) << "stage-disaggregate: the module already has "
                                 "a plan; disaggregate an imported model";
      return signalPassFailure();
    }
    if (prefill.empty() || decode.empty()) {
      emitOptionError(module) << "stage-disaggregate: give both groups' "
                                 "plans, prefill=... and decode=...";
      return signalPassFailure();
    }
    // The model's ops and attributes, once per group.
    SmallVector<Operation *> model;
    for (Operation &op : *module.getBody())
      model.push_back(&op);
    SmallVector<NamedAttribute> attrs;
    for (NamedAttribute a : module->getAttrs())
      if (a.getName() != SymbolTable::getSymbolAttrName())
        attrs.push_back(a);
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto copyModel = [&](StringRef name) {
      auto group = ModuleOp::create(b, module.getLoc(), name);
      for (NamedAttribute a : attrs)
        group->setAttr(a.getName(), a.getValue());
      OpBuilder in = OpBuilder::atBlockEnd(group.getBody());
      IRMapping map;
      for (Operation *op : model)
        in.clone(*op, map);
      return group;
    };
    ServingGroups groups{copyModel(ServingGroups::kPrefillGroup),
                         copyModel(ServingGroups::kDecodeGroup)};
    for (Operation *op : model)
      op->erase();
    for (NamedAttribute a : attrs)
      module->removeAttr(a.getName());

    for (auto [named, plan] :
         llvm::zip(groups.named(), SmallVector<StringRef>{prefill, decode}))
      if (failed(serveGroup(named.second, plan, named.first)))
        return signalPassFailure();

    if (gpus != 0) {
      std::string p, d;
      int64_t taken =
          describeGroup(groups.prefill, p) + describeGroup(groups.decode, d);
      if (taken != gpus) {
        emitOptionError(module)
            << "stage-disaggregate: the prefill group (" << p
            << ") and the decode group (" << d << ") take " << taken
            << " GPUs, not gpus=" << int64_t(gpus);
        return signalPassFailure();
      }
    }
  }

  /// Runs stage-infer under `plan` on `group`, the `phase` of the run.
  LogicalResult serveGroup(ModuleOp group, StringRef plan, StringRef phase) {
    InferPipelineOptions o;
    if (failed(o.parseFromString(plan)))
      return emitOptionError(getOperation())
             << "stage-disaggregate: cannot read the " << phase << " plan '"
             << plan << "'";
    if (o.phase.hasValue() || o.chunkedPrefill.hasValue() ||
        o.prefill.hasValue() || o.decode.hasValue())
      return emitOptionError(getOperation())
             << "stage-disaggregate: the " << phase
             << " plan cannot set phase, chunked-prefill, prefill or decode";
    if ((phase == "prefill") != (o.decodeTokens == 0))
      return emitOptionError(getOperation())
             << "stage-disaggregate: "
             << (phase == "prefill"
                     ? "the prefill group decodes nothing: its plan has no "
                       "decode-tokens"
                     : "the decode group's plan needs decode-tokens > 0");
    o.phase = phase.str();
    OpPassManager pm(ModuleOp::getOperationName());
    auto errorHandler = [&](const Twine &msg) {
      return emitOptionError(getOperation()) << msg;
    };
    // An error in a group's plan says which group it is.
    ScopedDiagnosticHandler naming(&getContext(), [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error)
        d.attachNote(group.getLoc())
            << "in the " << phase << " group's plan '" << plan << "'";
      return failure();
    });
    if (failed(buildInferPipeline(pm, o, errorHandler, /*handoff=*/true)))
      return failure();
    return runPipeline(pm, group);
  }
};
} // namespace
