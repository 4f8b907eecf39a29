//===- NumericExprTest.cpp - Compiled expressions agree with exact ones ---===//

#include "Stage/Support/NumericExpr.h"

#include "llvm/ADT/STLExtras.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace sym;

namespace {

Expr parse(const char *text) {
  Result<Expr> e = Expr::parse(text);
  EXPECT_TRUE(bool(e)) << e.error();
  return *e;
}

TEST(NumericExpr, AgreesWithExactEvaluation) {
  SymbolSlots slots;
  const char *texts[] = {"2*B*S*D/tp", "B*S/(M*dp) + H*Dh", "S^2*H/(3*tp)", "7",
                         "(H + 2*KV)*Dh - D/cp"};
  Bindings b{{"B", 512}, {"S", 4096}, {"D", 8192}, {"tp", 8}, {"M", 16},
             {"dp", 4},  {"H", 64},   {"Dh", 128}, {"KV", 8}, {"cp", 2}};
  std::vector<double> values;
  std::vector<NumericExpr> compiled;
  for (const char *t : texts)
    compiled.emplace_back(parse(t), slots);
  slots.fill(b, values);
  for (auto [t, c] : llvm::zip(texts, compiled)) {
    double exact = parse(t).evaluateRational(b)->toDouble();
    EXPECT_NEAR(c.evaluate(values), exact, std::abs(exact) * 1e-15) << t;
  }
}

TEST(NumericExpr, SlotsAreSharedAcrossExpressions) {
  SymbolSlots slots;
  NumericExpr a(parse("B*tp"), slots), c(parse("tp/B"), slots);
  EXPECT_EQ(slots.size(), 2u);
  std::vector<double> values;
  slots.fill({{"B", 4}, {"tp", 2}}, values);
  EXPECT_EQ(a.evaluate(values), 8);
  EXPECT_EQ(c.evaluate(values), 0.5);
}

TEST(NumericExpr, UnboundOrZeroDivisorIsNotFinite) {
  SymbolSlots slots;
  NumericExpr e(parse("B/tp"), slots);
  std::vector<double> values;
  slots.fill({{"B", 4}}, values);
  EXPECT_TRUE(std::isnan(e.evaluate(values)));
  slots.fill({{"B", 4}, {"tp", 0}}, values);
  EXPECT_FALSE(std::isfinite(e.evaluate(values)));
  EXPECT_TRUE(NumericExpr(Expr(), slots).isZero());
}

} // namespace
