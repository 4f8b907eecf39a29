//===- GradientExchange.h - Gradients summed across pipeline stages -*- C++ -*-===//
//
// Two passes sum the gradients of copies of a weight that different
// pipeline stages hold: DualPipe's mirrored copies of a stage, and the
// weights several stages use (tied embeddings, shared blocks). Both send
// the gradient the optimizer would read to each other holder and add the
// ones they receive.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TRANSFORMS_GRADIENTEXCHANGE_H
#define STAGE_LIB_TRANSFORMS_GRADIENTEXCHANGE_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::stage {

/// The weight `step` updates (through the data-parallel split ZeRO takes
/// of it); null when it is not a `stage.param`.
ParamOp getUpdatedParam(OptimizerStepOp step);

/// The first channel no send or receive of the pipeline uses.
int64_t getFirstFreeChannel(PipelineOp pipe);

/// A holder of another copy: `shift` steps along pp away; what goes to it
/// travels on channel `out`, what comes from it on `in` (-1: nothing).
struct GradientPeer {
  int64_t shift, out, in;
};

/// Before `step` (at `b`'s insertion point): its gradient sent to every
/// peer that takes it, theirs received and added; the step then reads the
/// sum.
void addPeerGradients(OpBuilder &b, OptimizerStepOp step,
                      FlatSymbolRefAttr grid, ArrayRef<GradientPeer> peers);

/// Runs `sum` on each pipeline of `module` that `applies` to, with the
/// module's grid (an error on the pipeline when it has none).
LogicalResult
sumOverPipelines(ModuleOp module, function_ref<bool(PipelineOp)> applies,
                 function_ref<LogicalResult(PipelineOp, FlatSymbolRefAttr)> sum);

/// The shortest shift along a ring of `pp` ranks from `from` to `to`
/// (halfway round: negative when `to` is the lower rank).
int64_t getRingShift(int64_t from, int64_t to, int64_t pp);

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_GRADIENTEXCHANGE_H
