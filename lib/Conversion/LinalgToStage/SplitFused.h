//===- SplitFused.h - Fused projections back into their parts ---*- C++ -*-===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_SPLITFUSED_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_SPLITFUSED_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::stage {

/// The pattern that computes a value part by part when every use of it is
/// one of the slices that partition it into equal parts (a reshape,
/// elementwise op or einsum moves after the slices; a parameter becomes one
/// per part).
void populateSplitFusedPatterns(RewritePatternSet &patterns);

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_SPLITFUSED_H
