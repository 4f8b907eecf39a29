//===- NumericExpr.cpp - Expressions compiled for fast evaluation ---------===//

#include "Stage/Support/NumericExpr.h"

#include <cmath>
#include <limits>

using namespace sym;

unsigned SymbolSlots::slot(llvm::StringRef name) {
  auto [it, added] = slots.try_emplace(name, unsigned(names.size()));
  if (added)
    names.push_back(name.str());
  return it->second;
}

void SymbolSlots::fill(const Bindings &b, std::vector<double> &values) const {
  values.assign(names.size(), std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = b.find(names[i]);
    if (it != b.end())
      values[i] = double(it->second);
  }
}

NumericExpr::NumericExpr(const Expr &e, SymbolSlots &slots) {
  for (const Expr::Term &t : e.terms()) {
    Term term{t.coef.toDouble(), {}};
    for (const auto &[name, exponent] : t.mono.factors())
      term.factors.push_back({slots.slot(name), exponent});
    terms.push_back(std::move(term));
  }
}

double NumericExpr::evaluate(const std::vector<double> &v) const {
  double sum = 0;
  for (const Term &t : terms) {
    double num = t.coefficient, den = 1;
    for (auto [slot, exponent] : t.factors) {
      double x = v[slot];
      for (int i = 0; i < std::abs(exponent); ++i)
        (exponent > 0 ? num : den) *= x;
    }
    sum += num / den;
  }
  return sum;
}
