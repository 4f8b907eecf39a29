//===- LinalgToStage.h - One function of linalg on tensors to stage -*- C++
//-*-===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_LINALGTOSTAGE_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_LINALGTOSTAGE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace mlir::stage {

/// Replaces `fn` (linalg, tensor and arith on static tensors, shard
/// annotations) by a stage function of the same name: arguments become
/// weights or inputs, ops become stage ops, then the graph returns to the
/// model's shapes (GraphCleanup.h). `gridAxes` names the axes of the shard
/// grid, in order. Errors are at the ops that cannot be converted.
LogicalResult convertLinalgFunction(func::FuncOp fn,
                                    ArrayRef<std::string> gridAxes);

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_LINALGTOSTAGE_H
