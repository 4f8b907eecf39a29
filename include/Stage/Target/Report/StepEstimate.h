//===- StepEstimate.h - A step's peak and time, for searches ----*- C++ -*-===//
//
// The numbers a plan search ranks by, read from the report itself so that
// they are the numbers `--stage-to-report` prints for the same step and
// bindings: the largest rank's memory peak and the iteration time.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_TARGET_REPORT_STEPESTIMATE_H
#define STAGE_TARGET_REPORT_STEPESTIMATE_H

#include "Stage/Analysis/DeviceModel.h"
#include "Stage/Support/SymExpr.h"

#include "mlir/IR/BuiltinOps.h"

#include <algorithm>

namespace mlir::stage::report {

struct StepEstimate {
  /// The largest peak of any rank (bytes) and the stage it is on.
  int64_t peakBytes = 0;
  int64_t peakStage = 0;
  /// That stage's model states (weights, gradients, master weights,
  /// moments): what no schedule or recomputation changes.
  int64_t modelStatesBytes = 0;
  /// Of which weights, gradients, and master weights with optimizer
  /// moments; and the parameters (weight elements) it holds.
  double weightBytes = 0, gradientBytes = 0, optimizerBytes = 0;
  double parameters = 0;
  /// The report's iteration (schedule + reductions + optimizer), seconds;
  /// for a serving program, the prefill and every decode step.
  double iterationSeconds = 0;
  /// A serving program's time to first token and time per output token.
  bool serving = false;
  double ttftSeconds = 0, tpotSeconds = 0;
  /// The whole job's forward FLOPs per iteration (3x of it is the model
  /// FLOPs of MFU) and tokens per iteration (B S).
  double forwardFlops = 0;
  double tokens = 0;
};

/// The estimate of the partitioned training step or serving program of
/// `module` under `b` on `device` (a serving program's model states are
/// its weights); errors (a size that does not evaluate) go to the diagnostic
/// engine at the op concerned. A training step whose peak is above
/// `timeOnlyWithin` bytes (when positive) gets its memory only: its times
/// stay 0.
FailureOr<StepEstimate> estimateStep(ModuleOp module, const sym::Bindings &b,
                                     const DeviceModel &device,
                                     double timeOnlyWithin = 0);

/// The work of `module`'s training step that no schedule or overlap hides,
/// summed over its chunks and micro-batches (seconds), per step kind: the
/// forward, and the backward with its recomputation (the report's steps).
struct StagesWork {
  /// Compute; communication but the gradient reductions after the
  /// micro-batch loop; of it, ZeRO's gathers and reduce-scatters in the loop
  /// (which hide behind the step's compute at most).
  double compute[2] = {}, comm[2] = {}, zero3[2] = {};
  /// A step kind's unhidden work: compute + comm - min(zero3, compute).
  double step(unsigned kind) const {
    return compute[kind] + comm[kind] - std::min(zero3[kind], compute[kind]);
  }
  double total() const { return step(0) + step(1); }
};

/// The stages' work of `module`'s training step under `b`. A stage runs its
/// steps one after the other, and summed over stages, max(compute, zero3)
/// is at least the max of the sums: so the iteration of a pipeline of pp
/// stages over the same ops and degrees lasts at least the total of the
/// step without a pipeline divided by pp: the plan search's lower bound
/// (docs/Explore.md). Errors as estimateStep's.
FailureOr<StagesWork> estimateStagesWork(ModuleOp module,
                                         const sym::Bindings &b,
                                         const DeviceModel &device);

/// What `--requests`, `--scheduler`, `--slo` and `--requests-window` say,
/// unparsed (docs/Inference.md).
struct RequestStreamOptions {
  std::string workload;  // a file (.jsonl, .json, .csv) or a stream spelling
  std::string scheduler; // "max-batched-tokens=N,max-running=N,..."
  std::string slo;       // "ttft:SECONDS,tpot:SECONDS,attainment:F"
  std::string window;    // "FIRST:COUNT" iterations to list
  /// Where to write the traces of the window's iterations (empty: none).
  std::string tracesDir;
  /// The workload's arrivals sped up this many times (a search's load).
  double rateScale = 1;
};

/// What a request stream came to on a continuous-batching program: the
/// numbers a serving search under an SLO ranks by, read from the report's
/// request sections.
struct StreamEstimate {
  int64_t gpus = 0; // replicas x the program's
  /// Requests per second: arriving (the workload's, first to last) and
  /// served (over first arrival to last token).
  double arrivalRate = 0, requestsPerSecond = 0;
  double throughputPerGpu = 0; // output tokens/s
  double ttftP50 = 0, ttftP99 = 0, tpotP50 = 0, tpotP99 = 0;
  int64_t preemptions = 0;
  /// With an SLO: the fraction of requests meeting it, the requests/s that
  /// do per GPU, and whether the fraction reaches the SLO's target.
  double attainment = 0, goodputPerGpu = 0;
  bool meetsSlo = false;
};

/// Whether `o`'s workload reads and its scheduler and SLO parse, whatever
/// the program (errors at `at`).
LogicalResult checkStreamOptions(Operation *at, const RequestStreamOptions &o);

/// Serves `o`'s workload with `module`'s partitioned chunked-prefill
/// program under `b` on `device`; errors go to the diagnostic engine.
FailureOr<StreamEstimate> estimateStream(ModuleOp module,
                                         const sym::Bindings &b,
                                         const DeviceModel &device,
                                         const RequestStreamOptions &o);

} // namespace mlir::stage::report

#endif // STAGE_TARGET_REPORT_STEPESTIMATE_H
