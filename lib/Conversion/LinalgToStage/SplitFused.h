//===- SplitFused.h - Fused projections back into their parts ---*- C++ -*-===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_SPLITFUSED_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_SPLITFUSED_H

#include "Stage/Dialect/Stage/IR/StageBuilder.h"

namespace mlir::stage {

/// When every use of `op`'s result is one of the slices that partition it
/// into equal parts, computes it part by part (a reshape, elementwise op or
/// einsum moves after the slices; a parameter becomes one per part) and
/// erases it. True when it rewrote; `op` and the slices are gone then.
bool splitPartitioned(Operation *op, GraphBuilder &g, OpBuilder &b);

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_SPLITFUSED_H
