//===- Payload.h - What the payload of a linalg op computes -----*- C++ -*-===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_PAYLOAD_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_PAYLOAD_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/IR/Block.h"

#include <optional>

namespace mlir::stage {

enum class PayloadKind {
  Copy,        // yields an input unchanged (transpose, broadcast, copy)
  Elementwise, // an ewise op: `kind`, or generic with `flops` per element
  MulAdd,      // accumulates the product of two inputs: a contraction
  Sum,         // accumulates one input
  Max,         // keeps the maximum of one input and the accumulator
  Unknown,
};

struct Payload {
  PayloadKind kind = PayloadKind::Unknown;
  EwiseKind ewise = EwiseKind::generic;
  int64_t flops = 0;     // arithmetic ops of the payload, for `generic`
  unsigned copied = 0;   // Copy: the yielded input
  /// Elementwise of a known kind: the inputs in the op's operand order
  /// (`sub(in1, in0)` is {1, 0}; `mul(in0, in0)` as `square` is {0}).
  SmallVector<unsigned> order;
  std::string why;       // Unknown: what was not understood
};

/// Classifies the payload block of a linalg op with `numInputs` inputs
/// (block arguments [0, numInputs)) and one output (the last argument, the
/// accumulator or the initial value).
Payload classifyPayload(Block &body, unsigned numInputs);

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_PAYLOAD_H
