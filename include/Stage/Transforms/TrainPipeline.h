//===- TrainPipeline.h - The stage-train pass pipeline ----------*- C++ -*-===//
//
// `stage-train` chains the plan passes: stage-pipeline (pp > 1),
// stage-recompute, stage-autodiff, stage-shard and stage-partition. Its
// options are the plan a user writes; tools that build plans themselves
// (a plan search) fill them and call buildTrainPipeline.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_TRANSFORMS_TRAINPIPELINE_H
#define STAGE_TRANSFORMS_TRAINPIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::stage {

struct TrainPipelineOptions : public PassPipelineOptions<TrainPipelineOptions> {
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
  Option<int64_t> zero{*this, "zero",
                       llvm::cl::desc("ZeRO stage 0-3 (3 = FSDP)"),
                       llvm::cl::init(0)};
  Option<std::string> order{
      *this, "order",
      llvm::cl::desc("Grid axes, outermost first; the axes not listed keep "
                     "their places (default pp,dp,cp,ep,tp)"),
      llvm::cl::init("pp,dp,cp,ep,tp")};
  Option<std::string> routing{
      *this, "routing",
      llvm::cl::desc("How routers spread tokens over experts: uniform, "
                     "zipf:S or loads:F0/F1/... (one fraction per expert)"),
      llvm::cl::init("uniform")};
  Option<std::string> rules{
      *this, "rules",
      llvm::cl::desc("JSON file overriding the sharding rules")};
  Option<std::string> overlap{
      *this, "overlap",
      llvm::cl::desc("Communication the traces overlap with compute: all, "
                     "none, or a comma-separated list of grad (data-parallel "
                     "gradient reductions during the backward), tp (a chain "
                     "of collectives per communicator group), fsdp (ZeRO-3 "
                     "gathers and reduce-scatters per layer, gathered one "
                     "layer ahead)"),
      llvm::cl::init("all")};
  // The pipeline.
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc(
          "gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipe-v or dualpipe"),
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

/// Adds the passes of one training iteration under the plan `o` to `pm`;
/// options that contradict each other fail through `errorHandler`.
LogicalResult
buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &o,
                   function_ref<LogicalResult(const Twine &)> errorHandler);

} // namespace mlir::stage

#endif // STAGE_TRANSFORMS_TRAINPIPELINE_H
