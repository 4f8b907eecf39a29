//===- InferPipeline.h - The stage-infer pass pipeline ----------*- C++ -*-===//
//
// `stage-infer` chains the serving passes: stage-pipeline (pp > 1),
// stage-serve, stage-shard and stage-partition. Its options are the serving
// plan a user writes.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_TRANSFORMS_INFERPIPELINE_H
#define STAGE_TRANSFORMS_INFERPIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::stage {

struct InferPipelineOptions : public PassPipelineOptions<InferPipelineOptions> {
  Option<int64_t> dp{*this, "dp",
                     llvm::cl::desc("Data-parallel replicas (0: the module's "
                                    "binding, else 1)"),
                     llvm::cl::init(0)};
  Option<int64_t> tp{*this, "tp",
                     llvm::cl::desc("Tensor-parallel degree: heads, KV heads "
                                    "(replicated when tp > KV) and FFN split"),
                     llvm::cl::init(0)};
  Option<int64_t> cp{*this, "cp",
                     llvm::cl::desc("Context-parallel degree (prefill only)"),
                     llvm::cl::init(0)};
  Option<int64_t> ep{
      *this, "ep",
      llvm::cl::desc("Expert-parallel degree: experts spread over ep, "
                     "attention data-parallel over the same ranks"),
      llvm::cl::init(0)};
  Option<int64_t> pp{*this, "pp",
                     llvm::cl::desc("Pipeline stages, each a group of layers"),
                     llvm::cl::init(0)};
  Option<bool> sp{*this, "sp",
                  llvm::cl::desc("Megatron sequence parallelism in the "
                                 "prefill (with tp > 1)"),
                  llvm::cl::init(false)};
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
  ListOption<int64_t> layersPerStage{*this, "layers-per-stage",
                                     llvm::cl::desc("Layers of each stage")};
  Option<int64_t> microBatches{
      *this, "micro-batches",
      llvm::cl::desc("Groups of requests in flight (M), pipelined over pp"),
      llvm::cl::init(1)};
  Option<int64_t> decodeTokens{
      *this, "decode-tokens",
      llvm::cl::desc("Decode steps per request (N); 0: prefill only"),
      llvm::cl::init(0)};
  Option<int64_t> chunkedPrefill{
      *this, "chunked-prefill",
      llvm::cl::desc("Continuous batching: prompt tokens prefilled per "
                     "iteration next to the running requests' decode "
                     "tokens (0: separate prefill and decode)"),
      llvm::cl::init(0)};
  Option<std::string> phase{
      *this, "phase",
      llvm::cl::desc("prefill, decode or both (default: both when "
                     "decode-tokens > 0)"),
      llvm::cl::init("")};
  Option<std::string> prefill{
      *this, "prefill",
      llvm::cl::desc("Disaggregated serving: the prefill group's plan, as "
                     "in prefill={tp=8} (degrees, sp, micro-batches, "
                     "layers-per-stage, order, rules)")};
  Option<std::string> decode{
      *this, "decode",
      llvm::cl::desc("Disaggregated serving: the decode group's plan, as in "
                     "decode={dp=4 tp=2}; its ranks follow the prefill "
                     "group's")};
  Option<int64_t> gpus{
      *this, "gpus",
      llvm::cl::desc("With prefill= and decode=: the GPUs of the run, which "
                     "the two groups must fill exactly (0: whatever they "
                     "take)"),
      llvm::cl::init(0)};
};

/// Adds the passes of a serving run under the plan `o` to `pm`. With
/// `handoff`, the run is one group of a disaggregated one (stage-serve
/// handoff).
LogicalResult
buildInferPipeline(OpPassManager &pm, const InferPipelineOptions &o,
                   function_ref<LogicalResult(const Twine &)> errorHandler,
                   bool handoff = false);

} // namespace mlir::stage

#endif // STAGE_TRANSFORMS_INFERPIPELINE_H
