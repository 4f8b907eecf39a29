//===- ConvertLinalgToStage.cpp - The convert-linalg-to-stage pass --------===//
//
// The module's shard grid becomes the degrees of the stage axes it names
// (`grid-axes`), and each function is converted (LinalgToStage.h).
//
//===----------------------------------------------------------------------===//

#include "Stage/Conversion/Passes.h"

#include "LinalgToStage.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace mlir::stage {
#define GEN_PASS_DEF_CONVERTLINALGTOSTAGE
#include "Stage/Conversion/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;

namespace {
struct ConvertLinalgToStagePass
    : mlir::stage::impl::ConvertLinalgToStageBase<ConvertLinalgToStagePass> {
  using ConvertLinalgToStageBase::ConvertLinalgToStageBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::string> names;
    for (const std::string &a : gridAxes) {
      if (!llvm::is_contained(ArrayRef<StringRef>{"pp", "dp", "cp", "ep", "tp"},
                              a)) {
        module.emitError("grid-axes: '")
            << a << "' is not a stage axis (pp, dp, cp, ep, tp)";
        return signalPassFailure();
      }
      if (a == "pp") {
        module.emitError("grid-axes: 'pp' is no sharding axis; pipeline "
                         "stages come from stage-train's pp= option");
        return signalPassFailure();
      }
      names.push_back(a);
    }
    // The shard grid becomes the degrees of the named axes.
    SmallVector<shard::GridOp> grids(module.getOps<shard::GridOp>());
    if (grids.size() > 1) {
      grids[1].emitOpError("is a second grid; stage plans on one");
      return signalPassFailure();
    }
    sym::Bindings degrees;
    if (!grids.empty()) {
      shard::GridOp gridOp = grids.front();
      if (names.size() != size_t(gridOp.getRank())) {
        gridOp.emitOpError("has ")
            << gridOp.getRank() << " axes but grid-axes names " << names.size();
        return signalPassFailure();
      }
      for (auto [name, size] : llvm::zip(names, gridOp.getShape())) {
        if (ShapedType::isDynamic(size)) {
          gridOp.emitOpError("has a dynamic axis; stage needs its size");
          return signalPassFailure();
        }
        degrees[name] = size;
      }
    }
    SmallVector<std::string> weightArgs(weights.begin(), weights.end());
    if (failed(convertLinalgFunctions(module, names, weightArgs)))
      return signalPassFailure();
    for (shard::GridOp gridOp : grids)
      gridOp.erase();
    if (!degrees.empty()) {
      FailureOr<sym::Bindings> bindings = getModuleBindings(module);
      if (failed(bindings))
        return signalPassFailure();
      for (auto &[k, v] : degrees)
        (*bindings)[k] = v;
      setModuleBindings(module, *bindings);
    }
  }
};
} // namespace
