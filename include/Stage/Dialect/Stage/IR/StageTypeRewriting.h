//===- StageTypeRewriting.h - Rewriting a graph's types in place -*- C++ -*-===//

#ifndef STAGE_DIALECT_STAGE_IR_STAGETYPEREWRITING_H
#define STAGE_DIALECT_STAGE_IR_STAGETYPEREWRITING_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include <functional>

namespace mlir::stage {

/// Replaces every `!stage.tensor` type of the results and block arguments
/// of `root` and the ops nested in it by `fn(type)`.
void rewriteTensorTypes(Operation *root,
                        llvm::function_ref<SymTensorType(SymTensorType)> fn);

/// Applies `s` to every symbolic type and expression attribute under `root`
/// (`B` -> `B/M` for one micro-batch).
void substituteSymbols(Operation *root, const sym::Substitution &s);

/// fp32 training: every floating-point element type becomes f32.
void convertFloatsToF32(Operation *root);

} // namespace mlir::stage

#endif // STAGE_DIALECT_STAGE_IR_STAGETYPEREWRITING_H
