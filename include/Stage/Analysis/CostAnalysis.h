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

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_COSTANALYSIS_H
