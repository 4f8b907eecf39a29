//===- PipelineSchedule.h - Orders of micro-batch steps ---------*- C++ -*-===//
//
// GPipe, 1F1B and interleaved 1F1B (Narayanan et al. 2021) as the ordered
// list of forward and backward steps each physical stage runs. The trace
// emitter expands these orders; the report and the tests evaluate them.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_PIPELINESCHEDULE_H
#define STAGE_ANALYSIS_PIPELINESCHEDULE_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::stage {

struct PipelineStep {
  bool forward;
  int64_t chunk;      // virtual stage: chunk c runs on physical stage c % pp
  int64_t microbatch; // 0 .. M-1
  bool operator==(const PipelineStep &o) const {
    return forward == o.forward && chunk == o.chunk && microbatch == o.microbatch;
  }
};

struct ScheduleShape {
  ScheduleKind kind;
  int64_t stages;        // physical stages, pp
  int64_t virtualStages; // chunks per physical stage, v
  int64_t microBatches;  // M
};

/// Why a schedule cannot run `shape` (empty if it can): the interleaved
/// schedule needs M to be a multiple of pp.
std::string checkSchedule(const ScheduleShape &shape);

/// The steps physical stage `p` runs, in order.
std::vector<PipelineStep> getStageSchedule(const ScheduleShape &shape,
                                           int64_t p);

struct TimedStep {
  PipelineStep step;
  double start, end;
};
/// Per physical stage, its steps with their start and end times.
using Timeline = std::vector<std::vector<TimedStep>>;

/// The timeline when every stage runs its steps in order, a forward step of
/// chunk (virtual stage) `c` takes `forward[c]` and a backward `backward[c]`
/// (each chunk its own: stages differ), and each step waits for its
/// neighbour's step of the same micro-batch. None if the orders wait on
/// each other (a schedule bug).
std::optional<Timeline> simulateTimeline(const ScheduleShape &shape,
                                         ArrayRef<double> forward,
                                         ArrayRef<double> backward);
/// The same with equal stages: a forward step of a chunk takes
/// `forward / v` and a backward `backward / v`.
std::optional<Timeline> simulateTimeline(const ScheduleShape &shape,
                                         double forward, double backward);

/// The iteration time when every stage runs its steps in order, a forward
/// step of a chunk takes `forward / v` and a backward `backward / v`, and
/// each step waits for its neighbour's step of the same micro-batch. None if
/// the orders wait on each other (a schedule bug).
std::optional<double> simulateSchedule(const ScheduleShape &shape,
                                       double forward, double backward);

/// Idle time over ideal compute time: (pp - 1) / (v * M).
double getBubbleFraction(const ScheduleShape &shape);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_PIPELINESCHEDULE_H
