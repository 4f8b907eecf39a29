//===- PipelineSchedule.h - Orders of micro-batch steps ---------*- C++ -*-===//
//
// GPipe, 1F1B, interleaved 1F1B (Narayanan et al. 2021), the zero-bubble
// schedules ZB-H1 and ZB-V (Qi et al. 2024), DualPipe and DualPipeV
// (DeepSeek) as the
// ordered list of steps each physical stage runs. The zero-bubble schedules run
// a backward step as two: the input gradient (B), on the critical path, and the
// weight gradient (W), which fills what would be idle. The trace emitter
// expands these orders; the memory model, the report and the tests evaluate
// them.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_PIPELINESCHEDULE_H
#define STAGE_ANALYSIS_PIPELINESCHEDULE_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::stage {

enum class StepKind : uint8_t {
  Forward,
  Backward,   // input and weight gradients together
  InputGrad,  // B: the gradient the previous stage waits for
  WeightGrad, // W: the weight gradients, any time after B
};

/// 16 bytes: deep pipelines' orders hold hundreds of thousands (checkSchedule
/// keeps chunks and micro-batches below 2^31).
struct PipelineStep {
  PipelineStep() = default;
  PipelineStep(StepKind kind, int64_t chunk, int64_t microbatch,
               bool pairedWithNext = false)
      : kind(kind), chunk(int32_t(chunk)), microbatch(int32_t(microbatch)),
        pairedWithNext(pairedWithNext) {}

  StepKind kind = StepKind::Forward;
  int32_t chunk = 0;      // virtual stage (getPhysicalStage says where it runs)
  int32_t microbatch = 0; // 0 .. M-1
  /// Runs together with the next step (DualPipe's overlapped forward and
  /// backward of two micro-batches): both start when both are ready, and
  /// each one's communication can hide behind the other's compute.
  bool pairedWithNext = false;
  bool isForward() const { return kind == StepKind::Forward; }
  bool operator==(const PipelineStep &o) const {
    return kind == o.kind && chunk == o.chunk && microbatch == o.microbatch &&
           pairedWithNext == o.pairedWithNext;
  }
};

/// What one micro-batch's step of a chunk costs, in any unit (the orders of
/// ZB-V are planned with them; only their ratios matter).
struct StepWeights {
  double forward = 1, inputGrad = 1, weightGrad = 1;
};

struct ScheduleShape {
  ScheduleKind kind;
  int64_t stages;        // physical stages, pp
  int64_t virtualStages; // chunks per physical stage, v
  int64_t microBatches;  // M
  /// Per chunk (virtual stage), what its steps cost; empty: all equal.
  std::vector<StepWeights> weights = {};
};

/// Why a schedule cannot run `shape` (empty if it can): the interleaved
/// schedule needs M to be a multiple of pp, ZB-V and DualPipe(V) two chunks
/// per stage, DualPipe(V) at least 2 pp micro-batches, DualPipe an even pp
/// and M.
std::string checkSchedule(const ScheduleShape &shape);

/// Whether the orders are planned from the steps' weights (ZB-V's), and so
/// serve only the plans whose steps take the same times.
bool orderDependsOnWeights(const ScheduleShape &shape);

/// Per physical stage, the steps it runs, in order.
using StageOrders = std::vector<std::vector<PipelineStep>>;
/// The orders of `shape`'s stages; kept while a SymbolicCache lives, for
/// the plans and analyses that ask again (not copied: they run to millions
/// of steps).
std::shared_ptr<const StageOrders>
getStageSchedules(const ScheduleShape &shape);
/// The steps physical stage `p` runs, in order.
std::vector<PipelineStep> getStageSchedule(const ScheduleShape &shape,
                                           int64_t p);

/// A moment of a stage's order, for its memory: `step` runs on chunk
/// `chunks[position]` of the stage (StageMoments), with the counts kept
/// from `countsAt` on in StageMoments::counts.
struct StageMoment {
  PipelineStep step;
  uint32_t position = 0, countsAt = 0;
};
/// The moments of a stage's order at which its memory may peak, whatever
/// each chunk keeps per micro-batch (bytes are never negative): of the
/// moments with the same counts the first, and of those only the ones no
/// earlier moment covers (counts at least as large) -- among the moments
/// running the same chunk in the same direction (`running`: the transient
/// working set is the step's), or among all (`kept`: what is kept alone).
/// Both in the order's order: the first moment of the largest value over
/// either is the first of the whole order.
struct StageMoments {
  SmallVector<int64_t> chunks;
  /// Each moment's counts, per chunk: the micro-batches whose activations
  /// it keeps whole (forward started, backward or input gradient not
  /// ended), then those kept for their weight gradients (input gradient
  /// ended, weight gradient not). Flat: a search reads every stage's
  /// moments for every plan.
  std::vector<int64_t> counts;
  std::vector<StageMoment> running, kept;

  ArrayRef<int64_t> whole(const StageMoment &m) const {
    return ArrayRef<int64_t>(counts).slice(m.countsAt, chunks.size());
  }
  ArrayRef<int64_t> awaitingWeights(const StageMoment &m) const {
    return ArrayRef<int64_t>(counts).slice(m.countsAt + chunks.size(),
                                           chunks.size());
  }
};
/// Per physical stage, the moments of its order (kept while a
/// SymbolicCache lives).
std::shared_ptr<const std::vector<StageMoments>>
getScheduleMoments(const ScheduleShape &shape);

struct TimedStep {
  PipelineStep step;
  double start, end;
};
/// Per physical stage, its steps with their start and end times.
using Timeline = std::vector<std::vector<TimedStep>>;

/// The timeline when every stage runs its steps in order, the steps of
/// chunk `c` take `times[c]` (a whole backward `inputGrad + weightGrad`),
/// a forward waits for the previous chunk's forward of its micro-batch, an
/// input gradient for its forward and the next chunk's input gradient, a
/// weight gradient for its input gradient. None if the orders wait on each
/// other (a schedule bug).
std::optional<Timeline> simulateTimeline(const ScheduleShape &shape,
                                         ArrayRef<StepWeights> times);
/// The same with equal stages: a chunk's forward takes `forward / v`, its
/// input gradient `inputGrad / v` and its weight gradient `weightGrad / v`
/// (under DualPipe, whose chunks are whole stages, `forward` and so on).
std::optional<Timeline> simulateTimeline(const ScheduleShape &shape,
                                         double forward, double inputGrad,
                                         double weightGrad = 0);

/// What a timeline comes to: its last step's end and the most time any
/// stage spends running steps.
struct ScheduleSpan {
  double end = 0, busiest = 0;
};
/// simulateTimeline's span, without keeping the steps' times.
std::optional<ScheduleSpan> simulateSpan(const ScheduleShape &shape,
                                         ArrayRef<StepWeights> times);
/// The span of a timeline simulateTimeline gave: simulateSpan's numbers,
/// to the bit, without replaying it again.
ScheduleSpan getSpan(const Timeline &timeline);

/// The iteration time of the equal-stage timeline (a whole backward takes
/// `inputGrad + weightGrad`). None if the orders wait on each other.
std::optional<double> simulateSchedule(const ScheduleShape &shape,
                                       double forward, double inputGrad,
                                       double weightGrad = 0);

/// Idle time over ideal compute time of the busiest stage: (pp - 1) / (v M)
/// for GPipe, 1F1B and the interleaved schedule; for the zero-bubble ones
/// as the shape's weights give it.
double getBubbleFraction(const ScheduleShape &shape);

/// The chain of chunks a micro-batch passes through, and which micro-batches
/// do: all chunks and all M, except under DualPipe, whose first copy
/// (chunks 0 .. pp - 1) runs micro-batches [0, M / 2) and its mirrored copy
/// (chunks pp .. 2 pp - 1) [M / 2, M).
struct ChunkChain {
  int64_t first, last;          // chunks, inclusive
  int64_t firstBatch, endBatch; // micro-batches [firstBatch, endBatch)
};
ChunkChain getChunkChain(const ScheduleShape &shape, int64_t chunk);

/// The micro-batches whose activations a stage holds at most: from a
/// forward's start to the end of its backward (or weight gradient), in
/// whole stages (a chunk counts 1/v, under DualPipe 1: a copy's stage).
double getPeakInFlight(const ScheduleShape &shape, int64_t p);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_PIPELINESCHEDULE_H
