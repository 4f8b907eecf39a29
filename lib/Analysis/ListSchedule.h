//===- ListSchedule.h - ZB-V's orders by list scheduling --------*- C++ -*-===//
//
// The list scheduler that plans ZB-V (PipelineSchedule.cpp's only user).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_LISTSCHEDULE_H
#define STAGE_ANALYSIS_LISTSCHEDULE_H

#include "Stage/Analysis/PipelineSchedule.h"

namespace mlir::stage {

/// A rule of the list scheduler: which ready step a free rank runs first.
struct Preference {
  bool forwardFirst;     // a forward before an input gradient
  bool earlierInputGrad; // input gradients of the earlier chunk first
};

/// ZB-V (Qi et al. 2024, section 6): two chunks per rank in a V, planned as
/// the paper's heuristic does, by list scheduling with the steps' costs:
/// whenever a rank is free it runs a ready input gradient or forward (the
/// latter only while fewer than 1F1B's pp micro-batches, 2 pp chunk
/// activations, are in flight; the later chunk's first, as it brings a
/// micro-batch to its loss), in the order `pref` says, else a pending
/// weight gradient. Each chunk offers its earliest micro-batch. Should every
/// rank wait with work left, a forward may exceed the limit (it never has
/// in the tests). Deterministic in the weights (a step takes at least 1e-9
/// of the longest, so that time advances). Fills `orders` (keeping the
/// memory its vectors have); false if the schedule cannot go on (never).
bool listSchedule(const ScheduleShape &s, Preference pref, StageOrders &orders);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_LISTSCHEDULE_H
