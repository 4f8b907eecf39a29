//===- PlanPipeline.h - What stage-train and stage-infer share --*- C++ -*-===//
//
// The plan pipelines name their common options alike (degrees, order,
// rules, layers per stage); these fill the options of the passes both run
// and register either pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TRANSFORMS_PLANPIPELINE_H
#define STAGE_LIB_TRANSFORMS_PLANPIPELINE_H

#include "OptionString.h"

#include "Stage/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

namespace mlir::stage {

/// stage-pipeline's options (the schedule aside) from a plan's.
template <typename PlanOptions>
StagePipelineOptions pipelineOptions(const PlanOptions &o) {
  StagePipelineOptions p;
  p.onlyIfSplit = true;
  p.pp = o.pp;
  p.layersPerStage.assign(o.layersPerStage.begin(), o.layersPerStage.end());
  p.order = o.order;
  return p;
}

/// stage-shard's options (ZeRO and keep-gathered aside) from a plan's.
template <typename PlanOptions>
StageShardOptions shardOptions(const PlanOptions &o) {
  StageShardOptions s;
  s.dp = o.dp;
  s.tp = o.tp;
  s.cp = o.cp;
  s.ep = o.ep;
  s.pp = o.pp;
  s.sp = o.sp;
  s.order = o.order;
  s.rules = o.rules;
  s.routing = o.routing;
  return s;
}

/// Registers the plan pipeline `name` (stage-train, stage-infer): its option
/// string is checked, parsed into `Options` and handed to `build`.
template <typename Options>
void registerPlanPipeline(
    StringRef name, StringRef description,
    LogicalResult (*build)(OpPassManager &, const Options &,
                           function_ref<LogicalResult(const Twine &)>)) {
  std::string pass = name.str();
  registerPassPipeline(
      name, description,
      [pass, build](OpPassManager &pm, StringRef text,
                    function_ref<LogicalResult(const Twine &)> errorHandler) {
        if (failed(checkOptionString(pass, text, errorHandler)))
          return failure();
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        return build(pm, options, errorHandler);
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(Options());
      });
}

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_PLANPIPELINE_H
