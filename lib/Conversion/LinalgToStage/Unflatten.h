//===- Unflatten.h - Undo the frontends' flattening of rows -----*- C++ -*-===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_UNFLATTEN_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_UNFLATTEN_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::stage {

/// Patterns that move dimension-merging reshapes of a converted graph past
/// the ops that treat the merged dimensions as independent rows, and fold
/// reshape pairs and transposes into einsums.
void populateUnflattenPatterns(RewritePatternSet &patterns);

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_UNFLATTEN_H
