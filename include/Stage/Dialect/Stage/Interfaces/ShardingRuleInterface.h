//===- ShardingRuleInterface.h - How an op may be split ---------*- C++ -*-===//
//
// Most ops are described for sharding like an einsum: every dimension of
// every operand and result is a "factor" (an index), and splitting a factor
// over a grid axis splits every dimension that carries it. A factor absent
// from a result is summed over it (splitting it leaves a partial sum) when
// the op allows, and must stay unsplit otherwise. Ops give their model
// through ShardingRuleOpInterface; stage-shard plans with it and
// stage-symbolize relates dimensions through it.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_DIALECT_STAGE_INTERFACES_SHARDINGRULEINTERFACE_H
#define STAGE_DIALECT_STAGE_INTERFACES_SHARDINGRULEINTERFACE_H

#include "mlir/IR/OpDefinition.h"
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
  /// `n` new factors, in order.
  SmallVector<int> addFactors(unsigned n) {
    SmallVector<int> f;
    for (unsigned i = 0; i < n; ++i)
      f.push_back(addFactor());
    return f;
  }
  void freeze(int f) {
    if (f >= 0)
      frozen.set(f);
  }

  /// `([0, 1], [1, 2]) -> ([0, 2]) summable {1}`: the factors of each
  /// operand and result, then the sets that are not empty, and `linear`.
  void print(raw_ostream &os) const;
};

/// What a rule may depend on besides the op: the plan's decisions.
struct ShardingRuleOptions {
  /// More tp ranks than kv heads: every rank keeps all kv heads.
  bool replicateKV = false;
};

} // namespace mlir::stage

#include "Stage/Dialect/Stage/Interfaces/ShardingRuleInterface.h.inc"

#endif // STAGE_DIALECT_STAGE_INTERFACES_SHARDINGRULEINTERFACE_H
