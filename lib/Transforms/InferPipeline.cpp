//===- InferPipeline.cpp - The stage-infer pass pipeline ------------------===//

#include "Stage/Transforms/InferPipeline.h"

#include "Stage/Transforms/Passes.h"

#include "OptionString.h"

#include "PlanPipeline.h"


using namespace mlir;
using namespace mlir::stage;

/// The options a disaggregated plan gives once for both groups, and those
/// each group gives for itself.
static LogicalResult
buildDisaggregated(OpPassManager &pm, const InferPipelineOptions &o,
                   function_ref<LogicalResult(const Twine &)> errorHandler) {
  if (o.prefill.empty() || o.decode.empty())
    return errorHandler("stage-infer: disaggregated serving needs both "
                        "groups' plans, prefill={...} and decode={...}");
  for (const auto *whole :
       {&o.dp, &o.tp, &o.pp, &o.ep, &o.cp, &o.microBatches})
    if (whole->hasValue())
      return errorHandler("stage-infer: with prefill= and decode=, " +
                          whole->getArgStr() +
                          "= belongs in a group's plan, as in decode={" +
                          whole->getArgStr() + "=" +
                          std::to_string(int64_t(*whole)) + "}");
  if (o.sp || !o.layersPerStage.empty() || o.chunkedPrefill || !o.phase.empty())
    return errorHandler("stage-infer: with prefill= and decode=, give sp and "
                        "layers-per-stage in a group's plan; phase and "
                        "chunked-prefill do not apply");
  if (o.decodeTokens < 1)
    return errorHandler("stage-infer: disaggregated serving hands the KV "
                        "cache to a decode group: give decode-tokens > 0");
  // Each group's plan, with what both share.
  auto groupPlan = [&](StringRef name,
                       StringRef plan) -> FailureOr<std::string> {
    if (failed(checkOptionString("stage-infer " + name.str(), plan,
                                 errorHandler)))
      return failure();
    InferPipelineOptions g;
    if (failed(g.parseFromString(plan)))
      return errorHandler("stage-infer: cannot read " + name + "={" + plan +
                          "}");
    for (const auto *shared : {&g.decodeTokens, &g.chunkedPrefill, &g.gpus})
      if (shared->hasValue())
        return errorHandler("stage-infer: " + shared->getArgStr() +
                            "= is not part of a group's plan (" + name + "={" +
                            plan + "})");
    if (g.phase.hasValue() || g.prefill.hasValue() || g.decode.hasValue())
      return errorHandler("stage-infer: " + name +
                          "={...} sets its group's degrees and layout, not "
                          "phase, prefill or decode");
    std::string whole = plan.str();
    if (!g.order.hasValue() && o.order.hasValue())
      whole += " order=" + std::string(o.order);
    if (!g.rules.hasValue() && o.rules.hasValue())
      whole += " rules=" + std::string(o.rules);
    if (!g.routing.hasValue() && o.routing.hasValue())
      whole += " routing=" + std::string(o.routing);
    if (name == "decode")
      whole += " decode-tokens=" + std::to_string(o.decodeTokens);
    return whole;
  };
  FailureOr<std::string> prefill = groupPlan("prefill", o.prefill);
  if (failed(prefill))
    return failure();
  FailureOr<std::string> decode = groupPlan("decode", o.decode);
  if (failed(decode))
    return failure();
  StageDisaggregateOptions d;
  d.prefill = *prefill;
  d.decode = *decode;
  d.gpus = o.gpus;
  pm.addPass(createStageDisaggregate(d));
  return success();
}

LogicalResult mlir::stage::buildInferPipeline(
    OpPassManager &pm, const InferPipelineOptions &o,
    function_ref<LogicalResult(const Twine &)> errorHandler, bool handoff) {
  if (o.prefill.hasValue() || o.decode.hasValue())
    return buildDisaggregated(pm, o, errorHandler);
  if (o.gpus != 0)
    return errorHandler("stage-infer: gpus= checks the groups of a "
                        "disaggregated plan (prefill= and decode=); a single "
                        "plan takes dp x tp x pp x cp x ep GPUs");
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
  s.handoff = handoff;
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
      [](OpPassManager &pm, const InferPipelineOptions &o,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        return buildInferPipeline(pm, o, errorHandler);
      });
}
