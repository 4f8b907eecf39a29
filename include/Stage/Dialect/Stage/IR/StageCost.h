//===- StageCost.h - Cost of one op execution -------------------*- C++ -*-===//

#ifndef STAGE_DIALECT_STAGE_IR_STAGECOST_H
#define STAGE_DIALECT_STAGE_IR_STAGECOST_H

#include "Stage/Support/SymExpr.h"

#include <optional>

namespace mlir {
class Operation;
} // namespace mlir

namespace mlir::stage {

/// What one execution of an op costs. FLOPs are split by the unit that does
/// them: contractions run on matrix units, the rest on vector units.
struct Cost {
  sym::Expr contractionFlops;
  sym::Expr otherFlops;
  /// Bytes read plus bytes written.
  sym::Expr bytes;
  /// The part of `contractionFlops` that redoes forward work inside a
  /// backward kernel (flash attention's score recomputation).
  sym::Expr recomputedFlops;

  sym::Expr flops() const { return contractionFlops + otherFlops; }
  Cost &operator+=(const Cost &o) {
    contractionFlops += o.contractionFlops;
    otherFlops += o.otherFlops;
    bytes += o.bytes;
    recomputedFlops += o.recomputedFlops;
    return *this;
  }
  Cost scaled(const sym::Expr &n) const {
    return {contractionFlops * n, otherFlops * n, bytes * n,
            recomputedFlops * n};
  }
};

/// A contraction of two operands as the matrix product a library runs:
/// `batch` independent products (the kept indices of both operands) of
/// `rows` (the kept indices of the first only) by `columns` (of the second
/// only) results each.
struct MatmulGrid {
  sym::Expr rows, columns, batch;
};

/// The grid of `op` when it is a two-operand einsum; none otherwise.
std::optional<MatmulGrid> getMatmulGrid(Operation *op);

} // namespace mlir::stage

#endif // STAGE_DIALECT_STAGE_IR_STAGECOST_H
