//===- PlanSetup.h - The grid and degrees of a plan -------------*- C++ -*-===//

#ifndef STAGE_LIB_TRANSFORMS_PLANSETUP_H
#define STAGE_LIB_TRANSFORMS_PLANSETUP_H

#include "ShardingRules.h"

#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"

namespace mlir::stage {

struct PlanRequest {
  /// Degrees asked for; 0 keeps the module's binding (1 without one).
  SmallVector<std::pair<std::string, int64_t>> degrees;
  /// Comma-separated grid axes, outermost first.
  std::string order;
};

/// Creates the module's `stage.grid @grid` with the requested order (or
/// checks an existing one against it), binds the degrees, and returns the
/// plan with the module's bindings. The order may list only some axes: they
/// take the places of those axes in the default order `pp, dp, cp, ep, tp`,
/// in the order given, and the others keep theirs.
FailureOr<ParallelPlan> setUpPlan(ModuleOp module, const PlanRequest &req);

/// The degree of `axis` a pass option asks for: `requested`, or for 0 the
/// module's binding (1 without one); negative is an error.
FailureOr<int64_t> getRequestedDegree(ModuleOp module, StringRef axis,
                                      int64_t requested);

/// Applies the rule overrides of a JSON file (when `path` is set) and of the
/// module's `stage.sharding_rules` attribute.
LogicalResult loadRules(ModuleOp module, StringRef path, ParallelPlan &plan);

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_PLANSETUP_H
