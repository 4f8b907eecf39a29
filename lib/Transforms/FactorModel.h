//===- FactorModel.h - Ops as index spaces for sharding ---------*- C++ -*-===//
//
// Most ops are described for sharding like an einsum: every dimension of
// every operand and result is a "factor" (an index), and splitting a factor
// over a grid axis splits every dimension that carries it. A factor absent
// from a result is summed over it (splitting it leaves a partial sum) when
// the op allows, and must stay unsplit otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TRANSFORMS_FACTORMODEL_H
#define STAGE_LIB_TRANSFORMS_FACTORMODEL_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "llvm/ADT/SmallBitVector.h"

namespace mlir::stage {

struct FactorModel {
  unsigned numFactors = 0;
  /// Factor of each dimension of each operand / result; -1: none.
  SmallVector<SmallVector<int>> operands, results;
  /// Factors that may not be split.
  llvm::SmallBitVector frozen;
  /// Factors whose split leaves a partial sum in the results lacking them.
  llvm::SmallBitVector summable;
  /// Factors an operand's split along them is kept on: the op's work stays
  /// divided over that axis whatever the bytes of the alternatives
  /// (attention's queries: context parallelism never repeats attention).
  llvm::SmallBitVector keepSplit;
  /// Whether pending partial sums of the operands pass through (a sum of
  /// partial sums is a partial sum).
  bool linear = false;

  int addFactor() {
    frozen.resize(numFactors + 1);
    summable.resize(numFactors + 1);
    keepSplit.resize(numFactors + 1);
    return numFactors++;
  }
  void freeze(int f) {
    if (f >= 0)
      frozen.set(f);
  }
};

/// The model of `op`, or failure for ops sharded by hand.
FailureOr<FactorModel> getFactorModel(Operation *op, bool replicateKV);

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_FACTORMODEL_H
