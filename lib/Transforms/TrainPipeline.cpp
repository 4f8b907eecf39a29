//===- TrainPipeline.cpp - The stage-train pass pipeline ------------------===//

#include "Stage/Transforms/Passes.h"

#include "OptionString.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::stage;

namespace {
struct TrainOptions : public PassPipelineOptions<TrainOptions> {
  // The plan.
  Option<int64_t> dp{
      *this, "dp",
      llvm::cl::desc("Data-parallel degree (0: the module's binding, else 1)"),
      llvm::cl::init(0)};
  Option<int64_t> tp{
      *this, "tp",
      llvm::cl::desc(
          "Tensor-parallel degree (0: the module's binding, else 1)"),
      llvm::cl::init(0)};
  Option<int64_t> cp{
      *this, "cp",
      llvm::cl::desc(
          "Context-parallel degree (0: the module's binding, else 1)"),
      llvm::cl::init(0)};
  Option<int64_t> ep{
      *this, "ep",
      llvm::cl::desc(
          "Expert-parallel degree, a grid axis of its own: the GPUs are "
          "pp*dp*cp*ep*tp (Megatron-LM carves ep out of its data-parallel "
          "size, which is dp*ep here) (0: the module's binding, else 1)"),
      llvm::cl::init(0)};
  Option<int64_t> pp{
      *this, "pp",
      llvm::cl::desc(
          "Pipeline-parallel degree (0: the module's binding, else 1)"),
      llvm::cl::init(0)};
  Option<bool> sp{*this, "sp",
                  llvm::cl::desc("Megatron sequence parallelism (with tp > 1)"),
                  llvm::cl::init(true)};
  Option<bool> keepGathered{
      *this, "keep-gathered",
      llvm::cl::desc("Keep gathered activations for the backward"),
      llvm::cl::init(false)};
  Option<int64_t> zero{*this, "zero", llvm::cl::desc("ZeRO stage 0-3 (3 = FSDP)"),
                       llvm::cl::init(0)};
  Option<std::string> order{
      *this, "order",
      llvm::cl::desc("Grid axes, outermost first; the axes not listed keep "
                     "their places (default pp,dp,cp,ep,tp)"),
      llvm::cl::init("pp,dp,cp,ep,tp")};
  Option<std::string> rules{*this, "rules",
                            llvm::cl::desc("JSON file overriding the sharding rules")};
  // The pipeline.
  Option<std::string> schedule{*this, "schedule",
                               llvm::cl::desc("gpipe, 1f1b or interleaved"),
                               llvm::cl::init("1f1b")};
  Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("Chunks per rank (interleaved; 2 when not given)"),
      llvm::cl::init(0)};
  ListOption<int64_t> layersPerStage{*this, "layers-per-stage",
                                     llvm::cl::desc("Layers of each stage")};
  // The step.
  Option<int64_t> microBatches{*this, "micro-batches",
                               llvm::cl::desc("Micro-batches per iteration"),
                               llvm::cl::init(1)};
  Option<int64_t> microBatchSize{
      *this, "micro-batch-size",
      llvm::cl::desc("Sequences per micro-batch and data-parallel rank "
                     "(Megatron-LM's): micro-batches = B / (size * dp * ep)"),
      llvm::cl::init(0)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd, adam or adamw"),
                                llvm::cl::init("adamw")};
  Option<std::string> precision{*this, "precision",
                                llvm::cl::desc("mixed or fp32"),
                                llvm::cl::init("mixed")};
  Option<std::string> recompute{*this, "recompute",
                                llvm::cl::desc("none, selective or full"),
                                llvm::cl::init("none")};
};

LogicalResult
buildTrainPipeline(OpPassManager &pm, const TrainOptions &o,
                   function_ref<LogicalResult(const Twine &)> errorHandler) {
  if (o.microBatches.hasValue() && o.microBatchSize.hasValue())
    return errorHandler("stage-train: give micro-batches or micro-batch-size, "
                        "not both");
  // A pipeline unless pp is 1: pp=0 takes the module's binding, which the
  // pass reads; the pass also rejects pipeline options that pp=1 ignores.
  if (o.pp != 1 || o.schedule != "1f1b" || o.virtualStages != 0 ||
      !o.layersPerStage.empty()) {
    StagePipelineOptions p;
    p.onlyIfSplit = true;
    p.pp = o.pp;
    p.schedule = o.schedule;
    p.virtualStages = o.virtualStages;
    p.layersPerStage.assign(o.layersPerStage.begin(), o.layersPerStage.end());
    p.order = o.order;
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
  StageShardOptions s;
  s.dp = o.dp;
  s.tp = o.tp;
  s.cp = o.cp;
  s.ep = o.ep;
  s.pp = o.pp;
  s.sp = o.sp;
  s.keepGathered = o.keepGathered;
  s.zero = o.zero;
  s.order = o.order;
  s.rules = o.rules;
  pm.addPass(createStageShard(s));
  pm.addPass(createStagePartition());
  return success();
}
} // namespace

void mlir::stage::registerStagePipelines() {
  registerPassPipeline(
      "stage-train",
      "A forward graph to the SPMD program of one training iteration: "
      "stage-pipeline (pp > 1), stage-recompute, stage-autodiff, stage-shard, "
      "stage-partition",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        if (failed(checkOptionString("stage-train", text, errorHandler)))
          return failure();
        TrainOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        return buildTrainPipeline(pm, options, errorHandler);
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(TrainOptions());
      });
  registerSymbolizePipeline();
}
