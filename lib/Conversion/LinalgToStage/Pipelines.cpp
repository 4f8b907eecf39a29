//===- Pipelines.cpp - Frontend import pipelines --------------------------===//
//
// TOSA reaches stage through the upstream lowering to linalg on tensors, so
// stage only has to understand linalg. The upstream passes are registered
// too, for pipelines written by hand.
//
//===----------------------------------------------------------------------===//

#include "Stage/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace {
struct ImportTosaOptions : public PassPipelineOptions<ImportTosaOptions> {
  ListOption<std::string> gridAxes{
      *this, "grid-axes",
      llvm::cl::desc("stage axis names of the shard.grid's axes, in order")};
};
} // namespace

void mlir::stage::registerConversionPipelines() {
  registerTosaToLinalg();
  registerTosaToLinalgNamed();
  registerTosaToArithPass();
  registerTosaToTensorPass();
  tosa::registerTosaToLinalgPipelines();
  PassPipelineRegistration<ImportTosaOptions>(
      "stage-import-tosa",
      "TOSA to stage: the upstream tosa-to-linalg pipeline, tosa-to-arith and "
      "tosa-to-tensor, canonicalize, then convert-linalg-to-stage",
      [](OpPassManager &pm, const ImportTosaOptions &o) {
        TosaToLinalgOptions linalg;
        TosaToLinalgNamedOptions named;
        tosa::addTosaToLinalgPasses(pm, linalg, named);
        OpPassManager &fn = pm.nest<func::FuncOp>();
        fn.addPass(createTosaToArithPass());
        fn.addPass(createTosaToTensorPass());
        fn.addPass(createCanonicalizerPass());
        ConvertLinalgToStageOptions c;
        c.gridAxes.assign(o.gridAxes.begin(), o.gridAxes.end());
        pm.addPass(createConvertLinalgToStage(c));
      });
}
