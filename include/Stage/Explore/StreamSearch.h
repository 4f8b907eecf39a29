//===- StreamSearch.h - The best serving plan for a request stream -*- C++ -*-===//
//
// Vidur-Search's question, asked of the compiled program: which plan serves
// a request workload with the most goodput per GPU under an SLO. Every
// tensor-parallel degree dividing the GPUs is compiled once as a
// continuous-batching program (the replicas are the rest of the GPUs), and
// the workload is served under each token budget by the scheduler of
// BatchScheduler.h (docs/Explore.md).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_EXPLORE_STREAMSEARCH_H
#define STAGE_EXPLORE_STREAMSEARCH_H

#include "Stage/Analysis/DeviceModel.h"
#include "Stage/Target/Report/StepEstimate.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>

namespace mlir::stage::explore {

struct StreamSearchRequest {
  int64_t gpus = 1;
  DeviceModel device;
  /// The workload and the SLO; `stream.scheduler` holds the scheduler
  /// settings the search keeps (max-running, block, memory-utilization,
  /// and max-batched-tokens if given: then it is not varied).
  report::RequestStreamOptions stream;
  /// The token budgets tried when the scheduler does not fix one.
  std::vector<int64_t> budgets = {256, 512, 1024, 2048, 4096, 8192};
};

struct StreamCandidate {
  int64_t tp = 1, replicas = 1, maxBatchedTokens = 0;
  /// The stage-infer options and the --scheduler of this plan.
  std::string inferOptions, scheduler;
  /// At the workload's own rate.
  report::StreamEstimate estimate;
  /// With an SLO: the highest arrival rate (requests/s, the workload's
  /// arrivals sped up or slowed down) at which the plan still meets it
  /// (DistServe's goodput), within 5%, and that rate per GPU; 0 when it
  /// does not meet it at 1/1024 of the workload's rate.
  double goodput = 0, goodputPerGpu = 0;
};

struct StreamSearchResult {
  /// Best first: by goodput per GPU (with no SLO, output tokens/s per GPU
  /// at the workload's rate), then by p99 time to first token.
  std::vector<StreamCandidate> ranked;
  /// Degrees that do not compile or whose cache cannot hold a request, by
  /// reason.
  std::map<std::string, int64_t> excluded;
  int64_t compiled = 0, evaluated = 0;
};

/// Searches the serving plans of `model` (an imported model, its `S` the
/// compiled chunk) on `r.gpus` GPUs for `r.stream`'s workload. Fails only
/// when the workload or the options are wrong (a diagnostic at the model).
FailureOr<StreamSearchResult> searchStreams(ModuleOp model,
                                            const StreamSearchRequest &r);

} // namespace mlir::stage::explore

#endif // STAGE_EXPLORE_STREAMSEARCH_H
