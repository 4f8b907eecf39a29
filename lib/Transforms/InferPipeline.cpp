//===- InferPipeline.cpp - The stage-infer pass pipeline ------------------===//

#include "Stage/Transforms/InferPipeline.h"

#include "Stage/Transforms/Passes.h"

#include "PlanPipeline.h"


using namespace mlir;
using namespace mlir::stage;

LogicalResult mlir::stage::buildInferPipeline(
    OpPassManager &pm, const InferPipelineOptions &o,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  if (o.chunkedPrefill > 0 && (o.dp > 1 || o.ep > 1))
    return errorHandler("stage-infer: chunked-prefill batches one replica's "
                        "requests, and dp or ep would split them: model one "
                        "replica (replicas are independent)");
  if (o.pp != 1 || !o.layersPerStage.empty()) {
    StagePipelineOptions p = pipelineOptions(o);
    // With pp = 1 this leaves the program as it is; stage-serve marks a
    // real pipeline gpipe (forward steps in order).
    p.schedule = "1f1b";
    pm.addPass(createStagePipeline(p));
  }
  StageServeOptions s;
  s.microBatches = o.microBatches;
  s.decodeTokens = o.decodeTokens;
  s.phase = o.phase;
  s.chunkedPrefill = o.chunkedPrefill;
  s.tp = o.tp;
  s.cp = o.cp;
  s.ep = o.ep;
  pm.addPass(createStageServe(s));
  pm.addPass(createStageShard(shardOptions(o)));
  pm.addPass(createStagePartition());
  return success();
}

void mlir::stage::registerInferPipeline() {
  registerPlanPipeline<InferPipelineOptions>(
      "stage-infer",
      "A forward graph to the SPMD program of serving a batch of requests: "
      "stage-pipeline (pp > 1), stage-serve, stage-shard, stage-partition",
      buildInferPipeline);
}
