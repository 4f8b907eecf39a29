//===- RewriteHelpers.h - What the graph rewrites share ---------*- C++ -*-===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_REWRITEHELPERS_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_REWRITEHELPERS_H

#include "Stage/Support/SymExpr.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::stage {

/// A copy of the one-result `op` at `b`'s insertion point on `inputs`, its
/// result of type `type`.
Value cloneOn(Operation *op, ValueRange inputs, Type type, OpBuilder &b);

/// For each dimension of `to`, how many consecutive dimensions of `from`
/// it merges (0 for a unit dimension `to` adds); none when `to` is not such
/// a merge of `from`. Unit dimensions of `from` join a neighbouring group.
std::optional<SmallVector<unsigned>> mergeGroups(ArrayRef<sym::Expr> from,
                                                 ArrayRef<sym::Expr> to);

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_REWRITEHELPERS_H
