//===- LinalgLowering.h - Stage ops for one frontend op ---------*- C++ -*-===//
//
// What the conversion patterns (LinalgToStage.cpp) build with: the stage
// type of a static tensor, and the lowering of a linalg structured op read
// through its indexing maps, iterator types and payload (Payload.h).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_LINALGLOWERING_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_LINALGLOWERING_H

#include "Payload.h"

#include "Stage/Dialect/Stage/IR/StageBuilder.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::stage {

/// The stage type of a static ranked tensor; an error at `loc` otherwise.
FailureOr<SymTensorType> typeFor(Type t, Location loc);

/// `v`, read by `user` as data, must not be an initializer (tensor.empty,
/// linalg.fill): an error at `user` otherwise.
LogicalResult checkData(Value v, Operation *user);

/// What a linalg op computes, in its loops: the payload, each operand's
/// loop of each dimension (-1: a constant unit index), the loops' kinds and
/// extents, the converted inputs, the output's loops.
struct LinalgLoops {
  Operation *op;
  Payload payload;
  unsigned numInputs;
  SmallVector<SmallVector<int64_t>> dims;
  SmallVector<utils::IteratorType> iters;
  SmallVector<sym::Expr> extents;
  SmallVector<Value> operands;
  SmallVector<int64_t> outDims, outLoops;
  Type elementType;
  SymTensorType resultType;

  bool reduces() const {
    return llvm::any_of(iters, [](utils::IteratorType t) {
      return t == utils::IteratorType::reduction;
    });
  }
};

/// Builds the stage ops of one frontend op at the rewriter's insertion point.
class StageLowering {
public:
  StageLowering(OpBuilder &b, Location loc) : g(b, loc) {}

  /// `v` reshaped to `dims` (a reshape of a reshape is one reshape).
  Value reshape(Value v, ArrayRef<sym::Expr> dims);
  /// `v` (indexed by the loop dims `dims`, some constant unit dims) brought
  /// to loop order `target` by dropping unit dims, transposing and
  /// broadcasting; `extents` are the loop extents.
  Value toLoops(Value v, ArrayRef<int64_t> dims, ArrayRef<int64_t> target,
                ArrayRef<sym::Expr> extents);
  /// The loops of `op`, whose converted inputs are `inputs`.
  FailureOr<LinalgLoops> analyzeLinalg(linalg::LinalgOp op, ValueRange inputs);
  FailureOr<Value> convertContraction(const LinalgLoops &l);
  FailureOr<Value> convertReduction(const LinalgLoops &l);
  FailureOr<Value> convertParallel(const LinalgLoops &l);

  GraphBuilder g;
};

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_LINALGLOWERING_H
