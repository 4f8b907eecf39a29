//===- FunctionInputs.h - Function arguments as stage.input -----*- C++ -*-===//
//
// A training step takes no arguments: the data it reads are stage.input
// ops, which the plan passes can place (in a pipeline stage, in the
// micro-batch loop) like any other op.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TRANSFORMS_FUNCTIONINPUTS_H
#define STAGE_LIB_TRANSFORMS_FUNCTIONINPUTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::stage {

/// Replaces each tensor argument of `fn` by `stage.input "argN"` at the
/// start of its body and drops the arguments from its signature.
void convertArgumentsToInputs(func::FuncOp fn);

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_FUNCTIONINPUTS_H
