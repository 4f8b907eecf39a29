//===- CostAnalysis.h - Symbolic cost of a program --------------*- C++ -*-===//

#ifndef STAGE_ANALYSIS_COSTANALYSIS_H
#define STAGE_ANALYSIS_COSTANALYSIS_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include <functional>

namespace mlir::stage {

/// How many times `op` runs per execution of the region it is nested in up
/// to (not including) `root`: the product of the counts of the enclosing
/// `stage.repeat` ops.
sym::Expr getExecutionCount(Operation *op, Operation *root);

/// Calls `fn(op, count)` for every op nested under `root` with the number of
/// times it runs per execution of `root`.
void walkWithCounts(Operation *root,
                    llvm::function_ref<void(Operation *, const sym::Expr &)> fn);

/// The total cost of everything under `root`, repeats multiplied out.
Cost getTotalCost(Operation *root);

/// The part of a training iteration an op belongs to.
enum class Phase { Forward, Backward, Recompute, Optimizer };
constexpr unsigned kNumPhases = 4;
const char *getPhaseName(Phase p);

/// Forward ops are those of a micro-batch's forward region (or of a graph
/// without one), backward those of its backward region, recompute those
/// marked `stage.recompute`, optimizer the optimizer steps.
Phase getPhase(Operation *op);

struct PhaseCosts {
  Cost phases[kNumPhases];
  /// The part of the backward phase that flash-attention backward kernels
  /// spend recomputing the score matrix (the recompute phase holds only
  /// what the recomputation policy re-runs).
  sym::Expr attentionKernelRecomputeFlops;
  Cost &of(Phase p) { return phases[unsigned(p)]; }
  const Cost &of(Phase p) const { return phases[unsigned(p)]; }
};

/// Costs per phase; the score recomputation inside flash-attention backward
/// kernels stays in the backward, and is also counted on its own.
PhaseCosts getPhaseCosts(Operation *root);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_COSTANALYSIS_H
