//===- StepTimes.h - What a schedule's steps take ----------------*- C++
//-*-===//
//
// The roofline time of an op (compute at the device's rates, communication
// at its link bandwidth), and from it what one micro-batch's forward, input-
// gradient and weight-gradient steps of each chunk take: the report's
// pipeline timeline and the zero-bubble schedules' planning read them.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_STEPTIMES_H
#define STAGE_ANALYSIS_STEPTIMES_H

#include "Stage/Analysis/Bindings.h"
#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Analysis/DeviceModel.h"
#include "Stage/Analysis/RankClasses.h"
#include "Stage/Support/BatchScheduler.h"

namespace mlir::stage {

/// An op's roofline seconds over all its executions `n`: its kernel's, or
/// for a collective its sent bytes over the link; 0 for other ops. Errors
/// at the op when a size does not evaluate.
FailureOr<double> getRooflineSeconds(Operation *op, const Multiplicity &n,
                                     const sym::Bindings &b,
                                     const DeviceModel &d);

/// Calls `fn` with every op under `root` and its roofline seconds over all
/// its executions; stops at the first op whose size does not evaluate.
LogicalResult walkRooflineSeconds(Operation *root, const sym::Bindings &b,
                                  const DeviceModel &d,
                                  function_ref<void(Operation *, double)> fn);

/// The FLOPs of `root`'s ops of `phase` over all their executions under
/// `b` (the phase costs' FLOPs, evaluated numerically while a SymbolicCache
/// lives); errors at `root` when they do not evaluate.
FailureOr<double> getPhaseFlops(Operation *root, Phase phase,
                                const sym::Bindings &b);

/// Per chunk (virtual stage), the seconds of one micro-batch's forward,
/// input-gradient and weight-gradient steps on `d` (recomputation runs with
/// the input gradient; BackwardSplit.h says which op is which).
FailureOr<std::vector<StepWeights>> getStepTimes(func::FuncOp fn,
                                                 const StepStructure &s,
                                                 const sym::Bindings &b,
                                                 const DeviceModel &d);

/// The schedule `s` (`fn`'s structure) runs under `b` on `d`: its
/// micro-batch count evaluated and, for a schedule planned from its steps'
/// costs (zb-v), their times on `d`, the device whose time the schedule
/// is stated in (its order, and so the memory it keeps, can differ from
/// one device to another). Kept for the last bindings and device while a
/// SymbolicCache lives.
FailureOr<ScheduleShape> getScheduleShape(func::FuncOp fn,
                                          const StepStructure &s,
                                          const sym::Bindings &b,
                                          const DeviceModel &d);

/// The seconds of one mixed iteration of a continuous-batching serving
/// program (`stage.serve ... chunk`) at any mix of decode tokens and prompt
/// chunks: the iteration's ops compiled once, then evaluated per mix with
/// `B` the decoding requests and `T + 1` their mean context, `C` all the
/// chunks' tokens; the ops that depend on a chunk's place in its prompt
/// (its attention and cache writes, whose sizes mention `j`) once per
/// chunk at its own size `C` and prefix `j C`. The values need not be
/// integers: the sums over requests and chunks are exact.
class IterationTimes {
public:
  /// `fn`'s iteration under `b` (the model's sizes and the plan) on `d`.
  /// Errors at `fn` unless it is a chunked-prefill serving program on one
  /// pipeline stage.
  static FailureOr<IterationTimes> compile(func::FuncOp fn,
                                           const sym::Bindings &b,
                                           const DeviceModel &d);
  double seconds(const ::stage::IterationMix &mix) const;

private:
  struct Program;
  std::shared_ptr<const Program> program;
};

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_STEPTIMES_H
