//===- ScheduleReplay.h - Timelines of a schedule's orders ------*- C++ -*-===//
//
// The replay of a schedule's orders with given step times
// (PipelineSchedule.cpp's only user), compiled once per orders: a search
// replays every plan's.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_SCHEDULEREPLAY_H
#define STAGE_ANALYSIS_SCHEDULEREPLAY_H

#include "ListSchedule.h"

#include <cstdint>
#include <optional>

namespace mlir::stage {

/// A schedule's steps in an order in which each comes after its stage's
/// previous step and the steps it waits for (a forward for the previous
/// chunk's forward of its micro-batch, an input gradient or whole backward
/// for its forward and the next chunk's input gradient, a weight gradient
/// for its input gradient; the ends of a chunk chain wait for nothing
/// beyond them): a replay runs each once, never waiting, in one pass of
/// maxima and sums.
struct ReplayProgram {
  /// Each step as its code (getStepCode) and its micro-batch.
  struct Step {
    uint32_t code, microbatch;
  };
  std::vector<Step> steps;
  /// The indices of the steps that start with the next one, which runs
  /// after them (DualPipe's pairs: both start when both are ready).
  std::vector<uint32_t> pairs;
  /// Per step code, where its steps run and the slots their inputs'
  /// and own ends are kept in: micro-batch m's at base + m stride (slot 0
  /// holds 0, for no input; slot 1 is never read).
  struct Slots {
    uint32_t stage;
    uint32_t base[3], stride[3]; // two inputs, then the end
  };
  std::vector<Slots> slots;
  size_t slotCount = 2;
  int64_t stages = 0, chunks = 0;
};

/// The orders' program, or none if they wait on each other (a schedule
/// bug); compiled as a replay with `times` runs, whose span it gives (a
/// search replays most fixed orders once).
std::optional<ReplayProgram> compileReplay(const ScheduleShape &s,
                                           const StageOrders &orders,
                                           ArrayRef<StepWeights> times,
                                           ScheduleSpan &span);
/// The program of ZB-V's orders from the steps its list schedule started
/// (each after what it waits for), without reading the orders.
ReplayProgram compileListReplay(const ScheduleShape &s,
                                const StartedSteps &started);

/// The timeline's span when the steps of chunk `c` take `times[c]` (a whole
/// backward `inputGrad + weightGrad`) and start as soon as their stage and
/// inputs allow; with `record` (`orders`' steps), every step's times.
std::optional<ScheduleSpan> runReplay(const ReplayProgram &program,
                                      ArrayRef<StepWeights> times,
                                      const StageOrders *orders = nullptr,
                                      Timeline *record = nullptr);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_SCHEDULEREPLAY_H
