//===- TrainPipeline.cpp - The stage-train pass pipeline ------------------===//

#include "Stage/Transforms/TrainPipeline.h"

#include "Stage/Transforms/Passes.h"

#include "PlanPipeline.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

using namespace mlir;
using namespace mlir::stage;

LogicalResult mlir::stage::buildTrainPipeline(
    OpPassManager &pm, const TrainPipelineOptions &o,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  if (o.microBatches.hasValue() && o.microBatchSize.hasValue())
    return errorHandler("stage-train: give micro-batches or micro-batch-size, "
                        "not both");
  // A pipeline unless pp is 1: pp=0 takes the module's binding, which the
  // pass reads; the pass also rejects pipeline options that pp=1 ignores.
  if (o.pp != 1 || o.schedule != "1f1b" || o.virtualStages != 0 ||
      !o.layersPerStage.empty()) {
    StagePipelineOptions p = pipelineOptions(o);
    p.schedule = o.schedule;
    p.virtualStages = o.virtualStages;
    pm.addPass(createStagePipeline(p));
  }
  StageRecomputeOptions r;
  r.policy = o.recompute;
  pm.addPass(createStageRecompute(r));
  StageAutodiffOptions a;
  a.microBatches = o.microBatches;
  a.microBatchSize = o.microBatchSize;
  a.dp = o.dp;
  a.ep = o.ep;
  a.optimizer = o.optimizer;
  a.precision = o.precision;
  pm.addPass(createStageAutodiff(a));
  StageShardOptions s = shardOptions(o);
  s.keepGathered = o.keepGathered;
  s.zero = o.zero;
  pm.addPass(createStageShard(s));
  std::string why;
  if (failed(parseOverlap(o.overlap, why)))
    return errorHandler("stage-train: " + why);
  StagePartitionOptions part;
  part.overlap = o.overlap;
  pm.addPass(createStagePartition(part));
  pm.addPass(createStageSumSharedGradients());
  pm.addPass(createStageSumMirroredGradients());
  return success();
}

void mlir::stage::registerStagePipelines() {
  registerPlanPipeline<TrainPipelineOptions>(
      "stage-train",
      "A forward graph to the SPMD program of one training iteration: "
      "stage-pipeline (pp > 1), stage-recompute, stage-autodiff, stage-shard, "
      "stage-partition, stage-sum-shared-gradients, "
      "stage-sum-mirrored-gradients (dualpipe)",
      buildTrainPipeline);
}
