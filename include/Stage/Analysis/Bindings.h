//===- Bindings.h - Values of the symbols of a module -----------*- C++ -*-===//

#ifndef STAGE_ANALYSIS_BINDINGS_H
#define STAGE_ANALYSIS_BINDINGS_H

#include "Stage/Support/SymExpr.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::stage {

/// Parses `B=8,S=2048` (the command-line form) into `out`, overriding what
/// is there. Returns an error message, empty on success.
std::string parseBindingList(llvm::StringRef text, sym::Bindings &out);

/// Whether `dim` is divided by the expert count `E`, like an expert
/// buffer's `B*S*K/E` rows: tokens per expert on average. Routing decides
/// the real counts, so the average need not be whole (1 token to 4 of 32
/// experts is 1/8 per expert). A rank's E/ep experts hold a whole number
/// of rows when the tokens split evenly over the ranks: the costs and the
/// traces stay exact.
bool isPerExpertAverage(const sym::Expr &dim);

/// Whether `dim` is a serving program's requests per rank of the ranks
/// that split them (`B/ep`, `B/(dp*ep)`): the expected number each rank
/// holds, which need not be whole (1 request on 8 data-parallel attention
/// ranks: 1/8 each). The ranks hold B in all, so totals stay exact.
bool isRequestAverage(const sym::Expr &dim);
/// Whether `op` is part of a serving program (its module has a
/// `stage.serve`).
bool isServing(Operation *op);

/// Checks that every tensor dimension and repeat count under `root`
/// evaluates to a positive integer under `b` (a per-expert average: to a
/// positive number); the error is at the op whose type does not
/// (`H/tp = 64/3 is not an integer: tp must divide H`).
LogicalResult verifyBindings(Operation *root, const sym::Bindings &b);

/// Evaluates `e` under `b`, reporting a failure at `loc` with `what` as the
/// subject of the message.
FailureOr<int64_t> evaluateAt(Location loc, const sym::Expr &e,
                              const sym::Bindings &b, llvm::StringRef what);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_BINDINGS_H
