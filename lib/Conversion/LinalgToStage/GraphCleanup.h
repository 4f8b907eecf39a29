//===- GraphCleanup.h - A converted graph in the model's shapes -*- C++ -*-===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_GRAPHCLEANUP_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_GRAPHCLEANUP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::stage {

/// Applies the fused-projection splits and the unflattening rewrites to a
/// converted function until none applies, then erases the layout changes
/// nothing reads.
void cleanUpConvertedGraph(func::FuncOp fn);

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_GRAPHCLEANUP_H
