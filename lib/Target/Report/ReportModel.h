//===- ReportModel.h - What a report says, independent of format -*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_REPORT_REPORTMODEL_H
#define STAGE_LIB_TARGET_REPORT_REPORTMODEL_H

#include "Stage/Analysis/DeviceModel.h"
#include "Stage/Analysis/PipelineSchedule.h"
#include "Stage/Support/SymExpr.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::stage::report {

/// The backward's score recomputation inside flash-attention kernels: a
/// row of the FLOPs sections, under the backward it is part of.
constexpr const char *kAttentionKernelRecomputeKey = "attention_kernel_recompute";
constexpr const char *kAttentionKernelRecomputeLabel =
    "of which attention kernel recompute";

/// One number of the report: bound, and symbolic where it has a formula
/// (a schedule's peak or a roofline time has none).
struct Quantity {
  std::string key;   // JSON key, snake_case
  std::string label; // table label
  std::string unit;  // "FLOP", "B", "s", ""
  std::optional<sym::Expr> expr;
  sym::Rational value;
};

struct Section {
  std::string key;
  std::string title;
  std::vector<Quantity> rows;
  const Quantity *find(StringRef key) const;
};

/// The section of `sections` named `key`, or none.
const Section *findSection(ArrayRef<Section> sections, StringRef key);

/// A function's totals. Before partitioning they are the whole model's; a
/// partitioned program's are one rank's (local shapes).
struct FunctionReport {
  std::string name;
  std::string scope; // "the whole model", "one rank", ...
  std::vector<Section> sections;
};

/// The plan of a partitioned training step: its grid and GPUs.
struct JobReport {
  /// Grid axes, outermost first, with their degrees.
  std::vector<std::pair<std::string, int64_t>> axes;
  int64_t gpus = 1;
  /// The GPUs that run each pipeline stage's program (gpus / pp).
  int64_t ranksPerStage = 1;
  /// Serving (stage-infer) rather than a training step.
  bool serving = false;
  int64_t degree(StringRef axis) const {
    for (const auto &[a, d] : axes)
      if (a == axis)
        return d;
    return 1;
  }
  /// The first rank of each pipeline stage (pp coordinate p, every other
  /// coordinate 0).
  std::vector<int64_t> getStageFirstRanks() const {
    int64_t stride = 1;
    bool inner = false;
    for (const auto &[axis, d] : axes) {
      if (inner)
        stride *= d;
      inner |= axis == "pp";
    }
    std::vector<int64_t> ranks;
    for (int64_t p = 0; p < degree("pp"); ++p)
      ranks.push_back(p * stride);
    return ranks;
  }
};

/// One rank class: a pipeline stage (all its ranks hold the same shapes).
struct StageReport {
  int64_t stage = 0;
  std::string layers; // "0-15", "0-3, 8-11"; empty without a pipeline
  std::string peakAt; // what runs at the memory peak
  std::vector<Section> sections;
  const Section *find(StringRef key) const;
};

struct TimelineStep {
  StepKind kind;
  int64_t chunk, microbatch;
  double start, end; // seconds
};

struct PipelineReport {
  std::string schedule;
  int64_t stages = 1, virtualStages = 1, microBatches = 1;
  double bubble = 0; // idle over ideal compute time
  std::vector<std::vector<TimelineStep>> timeline;
  /// Seconds after the schedule's last step: the exposed gradient
  /// reductions and the optimizer step of the slowest stage.
  double afterSchedule = 0;
};

/// The traces themselves replayed in time (`--traces`): one rank per stage,
/// node by node (compute on lane 0, communication above).
struct TraceReplay {
  std::string dir;
  double iteration = 0; // seconds
  bool durations = true; // every compute node carried its duration
  struct Step {
    std::string name;
    double start, end;
    uint32_t lane;
  };
  std::vector<std::pair<int64_t, std::vector<Step>>> ranks; // rank, steps
};

/// A request stream served by a continuous-batching program
/// (`--requests`, RequestReport.cpp): the latency percentiles, throughput,
/// goodput and cache use. JSON writes each section as an object of plain
/// numbers, the `stream` section's at the top (`requests.ttft_seconds.p50`,
/// `requests.throughput_tokens_per_second`).
struct RequestsReport {
  std::string workload;
  std::vector<Section> sections;
  /// Seconds and the fraction of the KV cache in use (the fullest
  /// replica's), at most a few hundred points.
  std::vector<std::pair<double, double>> occupancy;
  /// The iterations `--requests-window` asked for: index, replica, start
  /// and seconds, decode tokens, prompt-chunk tokens, running and waiting
  /// requests, KV blocks in use.
  struct Iteration {
    int64_t index, replica;
    double start, seconds;
    int64_t decodes, promptTokens, running, waiting, kvBlocks;
  };
  std::vector<Iteration> window;
  const Section *find(StringRef key) const;
};

struct Report {
  sym::Bindings bindings;
  std::optional<DeviceModel> device;
  /// The device of the time estimates and the memory warning (`device`,
  /// else the H100 preset).
  std::optional<DeviceModel> roofline;
  std::optional<TraceReplay> replay;
  std::optional<RequestsReport> requests;
  /// The functions that are not a partitioned training step.
  std::vector<FunctionReport> functions;
  /// A partitioned training step: the plan; the whole model's parameters
  /// and the whole job's FLOPs, traffic and time per iteration (`totals`);
  /// one rank of each pipeline stage (`stages`); the pipeline.
  std::optional<JobReport> job;
  std::vector<Section> totals;
  std::vector<StageReport> stages;
  std::optional<PipelineReport> pipeline;
  std::vector<std::string> warnings;
  /// A numbers-only training report's job forward FLOPs per iteration
  /// (evaluated in floating point; the full report has them exactly in
  /// the job_flops section).
  double jobForwardFlops = 0;
  const Section *findTotal(StringRef key) const;
};

struct ReportRequest {
  /// The roofline of the time estimates and the memory capacity to warn at.
  std::optional<DeviceModel> device;
  /// Only what a plan search reads (StepEstimate.h): of each stage the
  /// memory section's model states, peak and parameters; of the job its
  /// time section; no other section and no warning. Every number built is
  /// built as always.
  bool numbersOnly = false;
  /// Numbers only: when a stage's peak (rounded up to a byte) is above this
  /// many bytes, the report stops at the stages' memory sections (a search
  /// drops such a plan and reads no time); 0: no limit.
  double timeOnlyWithin = 0;
};

/// A partitioned training step or serving run: the plan passes ran (a
/// grid, local shapes) and the function is one iteration or run.
bool isTrainingStep(ModuleOp module, func::FuncOp fn);

/// Builds the report of `module` under `bindings`: per function its FLOPs,
/// bytes and parameters; for a partitioned training step, the plan, the
/// whole model's parameters, the whole job's totals, per rank class its
/// memory, FLOPs, communication and time, and the pipeline.
FailureOr<Report> buildReport(ModuleOp module, const sym::Bindings &bindings,
                              const ReportRequest &request);

} // namespace mlir::stage::report

#endif // STAGE_LIB_TARGET_REPORT_REPORTMODEL_H
