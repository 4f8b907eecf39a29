//===- InferPipeline.cpp - The stage-infer pass pipeline ------------------===//

#include "Stage/Transforms/InferPipeline.h"

#include "Stage/Transforms/Passes.h"

#include "OptionString.h"


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
    StagePipelineOptions p;
    p.onlyIfSplit = true;
    p.pp = o.pp;
    // With pp = 1 this leaves the program as it is; stage-serve marks a
    // real pipeline gpipe (forward steps in order).
    p.schedule = "1f1b";
    p.layersPerStage.assign(o.layersPerStage.begin(), o.layersPerStage.end());
    p.order = o.order;
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
  StageShardOptions sh;
  sh.dp = o.dp;
  sh.tp = o.tp;
  sh.cp = o.cp;
  sh.ep = o.ep;
  sh.pp = o.pp;
  sh.sp = o.sp;
  sh.order = o.order;
  sh.rules = o.rules;
  pm.addPass(createStageShard(sh));
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
