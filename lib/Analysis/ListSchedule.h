//===- ListSchedule.h - ZB-V's orders by list scheduling --------*- C++ -*-===//
//
// The list scheduler that plans ZB-V (PipelineSchedule.cpp's only user).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_LISTSCHEDULE_H
#define STAGE_ANALYSIS_LISTSCHEDULE_H

#include "Stage/Analysis/PipelineSchedule.h"

#include <cstdint>
#include <limits>

namespace mlir::stage {

/// A rule of the list scheduler: which ready step a free rank runs first.
struct Preference {
  bool forwardFirst;     // a forward before an input gradient
  bool earlierInputGrad; // input gradients of the earlier chunk first
};

/// How a list schedule ended.
struct ListOutcome {
  enum Status { Planned, Abandoned, Stuck } status = Stuck;
  /// Planned, with every step taking its weight (none lengthened so that
  /// time advances) and no forward past the limit: the orders' timeline
  /// (simulateSpan's replay with the weights) ends at `end`, to the bit,
  /// as each step started when its inputs and its rank allowed.
  bool timed = false;
  double end = 0;
};

/// A step's code, as a list schedule's log (StartedSteps) and a replay
/// program (ScheduleReplay.h) keep it: CodesPerChunk chunk + its kind's.
enum StepCode {
  ForwardCode,
  InputGradCode,
  WeightGradCode,
  BackwardCode, // a whole backward: never in a list schedule's log
  CodesPerChunk
};
/// The code of `step`.
inline uint32_t getStepCode(const PipelineStep &step) {
  StepCode kind = step.kind == StepKind::Forward      ? ForwardCode
                  : step.kind == StepKind::InputGrad  ? InputGradCode
                  : step.kind == StepKind::WeightGrad ? WeightGradCode
                                                      : BackwardCode;
  return uint32_t(int64_t(CodesPerChunk) * step.chunk + kind);
}
/// The kind of the steps of code `code`.
inline StepKind getStepKind(uint32_t code) {
  static constexpr StepKind kinds[] = {StepKind::Forward, StepKind::InputGrad,
                                       StepKind::WeightGrad,
                                       StepKind::Backward};
  return kinds[code % CodesPerChunk];
}

/// The steps a list schedule started, in the order it started them, each
/// as its code (never a whole backward): the orders of the rules a plan
/// does not keep are never built.
using StartedSteps = std::vector<uint32_t>;

/// Where a list schedule stood when it first picked otherwise than another
/// rule would have: that rule's schedule is the same up to there, and
/// resumes from it (rules part after a sixth to a quarter of the steps in
/// a search's). The scheduler's state before that pick.
struct ListPoint {
  bool reached = false;
  /// The ready steps of the rank picking (ListSchedule.cpp's bits).
  int ready = 0;
  std::vector<int64_t> next, ended, inFlight;
  std::vector<double> free, workLeft;
  struct End {
    double time;
    int64_t code;
  };
  std::vector<End> ends;
  size_t head = 0, count = 0;
  double t = 0, endBound = 0;
  bool asWeighed = true, stalled = false;
  int64_t remaining = 0;
  StartedSteps started;
};
/// Whether rules `a` and `b` pick the same at `at`.
bool picksAlike(Preference a, Preference b, const ListPoint &at);

/// ZB-V (Qi et al. 2024, section 6): two chunks per rank in a V, planned as
/// the paper's heuristic does, by list scheduling with the steps' costs:
/// whenever a rank is free it runs a ready input gradient or forward (the
/// latter only while fewer than 1F1B's pp micro-batches, 2 pp chunk
/// activations, are in flight; the later chunk's first, as it brings a
/// micro-batch to its loss), in the order `pref` says, else a pending
/// weight gradient. Each chunk offers its earliest micro-batch. Should every
/// rank wait with work left (weights that differ from chunk to chunk can
/// make them; a model's, whose middle chunks are alike, have not in the
/// searches measured), a forward may exceed the limit. Deterministic in the
/// weights (a step takes at least 1e-9 of the longest, so that time advances).
/// Fills `started` (keeping the memory it has); Abandoned as soon as the
/// orders' timeline is sure to end after `abandonAfter` (a rank's steps so
/// far and the rest of its work, while the steps take their weights), Stuck if
/// the schedule cannot go on (never) or the shape is not ZB-V's. Resumes
/// from `from` (reached for `pref`) if given; fills, for each of `partings`
/// (another rule, a point), the point where this schedule first parts from
/// that rule's.
ListOutcome
listSchedule(const ScheduleShape &s, Preference pref, StartedSteps &started,
             double abandonAfter = std::numeric_limits<double>::infinity(),
             const ListPoint *from = nullptr,
             ArrayRef<std::pair<Preference, ListPoint *>> partings = {});

/// Per physical stage, the steps of a planned list schedule, in order.
StageOrders getListOrders(const ScheduleShape &s, const StartedSteps &started);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_LISTSCHEDULE_H
