//===- ListSchedule.h - ZB-V's orders by list scheduling --------*- C++ -*-===//
//
// The list scheduler that plans ZB-V (PipelineSchedule.cpp's only user).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_LISTSCHEDULE_H
#define STAGE_ANALYSIS_LISTSCHEDULE_H

#include "Stage/Analysis/PipelineSchedule.h"

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
/// Fills `orders` (keeping the memory its vectors have); Abandoned as soon as
/// the orders' timeline is sure to end after `abandonAfter` (a rank's steps so
/// far and the rest of its work, while the steps take their weights), Stuck if
/// the schedule cannot go on (never).
ListOutcome
listSchedule(const ScheduleShape &s, Preference pref, StageOrders &orders,
             double abandonAfter = std::numeric_limits<double>::infinity());

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_LISTSCHEDULE_H
