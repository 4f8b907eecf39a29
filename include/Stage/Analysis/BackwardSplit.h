//===- BackwardSplit.h - Input and weight gradients of a backward -*- C++
//-*-===//
//
// A micro-batch loop's backward computes two things: the gradient of the
// stage's input, which the previous stage waits for (B), and the gradients
// of its weights, which nothing waits for until the optimizer (W). The
// zero-bubble schedules run them as separate steps. An op is a weight-
// gradient op when everything it computes flows only into weight
// gradients: the loop's results, or the per-layer results of a repeat that
// flow there. Everything else (the input gradient's chain, sends, the
// recomputed forward, ops such as a norm's gradient that produce both) is
// the input-gradient step. Autodiff already emits the weight-gradient
// contractions as ops of their own, so the split is exact.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_BACKWARDSPLIT_H
#define STAGE_ANALYSIS_BACKWARDSPLIT_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::stage {

class BackwardSplit {
public:
  explicit BackwardSplit(MicrobatchesOp loop);

  /// `op` (in the backward block, at any depth) belongs to the weight-
  /// gradient step; a repeat does when its whole body does.
  bool isWeightGrad(Operation *op) const { return weight.contains(op); }
  /// `op` has a part in the step: itself, or for a repeat, ops of its body.
  bool runsIn(Operation *op, bool weightStep) const;
  /// Gradient `v` (an operand of the backward block's terminator) is
  /// complete after the weight-gradient step rather than the input one.
  bool isWeightStepValue(Value v) const;
  /// The weight-gradient step reads `v` (through a repeat's argument when
  /// a repeat takes it).
  bool readsInWeightStep(Value v) const;

private:
  void classify(Block &block, ArrayRef<bool> yieldIsWeight);
  llvm::DenseSet<Operation *> weight;
  /// Repeats with ops of both steps.
  llvm::DenseSet<Operation *> mixed;
};

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_BACKWARDSPLIT_H
