//===- LinalgToStage.h - One function of linalg on tensors to stage -*- C++
//-*-===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_LINALGTOSTAGE_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_LINALGTOSTAGE_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::stage {

/// Replaces each function of `module` with a body (linalg, tensor and arith
/// on static tensors, shard annotations) by a stage function of the same
/// name: arguments become weights or inputs, ops become stage ops, then the
/// graph returns to the model's shapes (GraphCleanup.h). `gridAxes` names
/// the axes of the shard grid, in order; `weights` names arguments that are
/// weights without a `stage.param` attribute (a position, or the name of
/// the argument's location). The first error, at the op that cannot be
/// converted, stops the conversion.
LogicalResult convertLinalgFunctions(ModuleOp module,
                                     ArrayRef<std::string> gridAxes,
                                     ArrayRef<std::string> weights = {});

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_LINALGTOSTAGE_H
