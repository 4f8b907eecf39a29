//===- Unflatten.h - Undo the frontends' flattening of row dimensions -*- C++
//-*-===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_UNFLATTEN_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_UNFLATTEN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::stage {

/// Moves dimension-merging reshapes of a converted graph past the ops that
/// treat the merged dimensions as independent rows, and folds reshape pairs.
void unflattenRows(func::FuncOp fn);

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_UNFLATTEN_H
