//===- NumericExpr.h - Expressions compiled for fast evaluation -*- C++ -*-===//
//
// An expression evaluated many times under different bindings (a plan
// search evaluates each compiled step for thousands of plans) is compiled
// once: its symbols become slots of a values array and its coefficients
// doubles, so that an evaluation is a few multiplications, with no symbol
// lookups by name and no arbitrary-precision arithmetic. For the analyses
// whose results are floating point anyway (times); sizes that must be
// exact keep Expr::evaluate.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_NUMERICEXPR_H
#define STAGE_SUPPORT_NUMERICEXPR_H

#include "Stage/Support/SymExpr.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

namespace sym {

/// Symbol names numbered in the order first seen: the slots of the values
/// that compiled expressions read.
class SymbolSlots {
public:
  unsigned slot(llvm::StringRef name);
  size_t size() const { return names.size(); }
  /// The value of every slot under `b`, NaN for a symbol `b` leaves unbound.
  void fill(const Bindings &b, std::vector<double> &values) const;

private:
  llvm::StringMap<unsigned> slots;
  std::vector<std::string> names;
};

class NumericExpr {
public:
  NumericExpr() = default;
  /// `e` with its symbols numbered in `slots`.
  NumericExpr(const Expr &e, SymbolSlots &slots);
  /// The value under slot values `v` (from SymbolSlots::fill): NaN when a
  /// symbol is unbound, infinite or NaN when a zero divides.
  double evaluate(const std::vector<double> &v) const;
  bool isZero() const { return terms.empty(); }

private:
  struct Term {
    double coefficient;
    llvm::SmallVector<std::pair<unsigned, int>, 3> factors;
  };
  std::vector<Term> terms;
};

} // namespace sym

#endif // STAGE_SUPPORT_NUMERICEXPR_H
