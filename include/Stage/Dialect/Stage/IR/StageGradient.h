//===- StageGradient.h - What an op's backward can ask for ------*- C++ -*-===//

#ifndef STAGE_DIALECT_STAGE_IR_STAGEGRADIENT_H
#define STAGE_DIALECT_STAGE_IR_STAGEGRADIENT_H

#include "mlir/IR/Value.h"

namespace mlir::stage {

class GraphBuilder;

/// The services autodiff offers to an op's gradient rule.
class GradientEmitter {
public:
  virtual ~GradientEmitter() = default;
  /// Builds into the backward graph, after what is already there.
  virtual GraphBuilder &builder() = 0;
  /// The gradient of a result of the op; null when nothing flows back.
  virtual Value getGradient(Value forwardResult) = 0;
  /// A forward value (an operand or result of the op) as the backward sees
  /// it: kept from the forward pass, or recomputed.
  virtual Value getForward(Value forwardValue) = 0;
  /// Whether an operand depends on a weight (or a received activation), so
  /// that its gradient is needed.
  virtual bool needsGradient(Value forwardOperand) = 0;
  /// Adds `grad` to the gradient of `forwardOperand`.
  virtual void addGradient(Value forwardOperand, Value grad) = 0;
};

} // namespace mlir::stage

#endif // STAGE_DIALECT_STAGE_IR_STAGEGRADIENT_H
