//===- Unflatten.h - Undo the frontends' flattening of row dimensions -*- C++
//-*-===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_UNFLATTEN_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_UNFLATTEN_H

#include "Stage/Support/SymExpr.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::stage {

/// Moves dimension-merging reshapes of a converted graph past the ops that
/// treat the merged dimensions as independent rows, and folds reshape pairs.
void unflattenRows(func::FuncOp fn);

/// A copy of the one-result `op` at `b`'s insertion point on `inputs`, its
/// result of type `type`.
Value cloneOn(Operation *op, ValueRange inputs, Type type, OpBuilder &b);

/// For each dimension of `to`, how many consecutive dimensions of `from`
/// it merges (0 for a unit dimension `to` adds); none when `to` is not such
/// a merge of `from`. Unit dimensions of `from` join a neighbouring group.
std::optional<SmallVector<unsigned>> mergeGroups(ArrayRef<sym::Expr> from,
                                                 ArrayRef<sym::Expr> to);

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_UNFLATTEN_H
