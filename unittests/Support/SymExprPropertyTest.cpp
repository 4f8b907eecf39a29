//===- SymExprPropertyTest.cpp - Randomized algebraic identities ----------===//
//
// Thousands of generated expressions and bindings: the canonical form obeys
// the ring laws structurally, and evaluation commutes with every operation.
//
//===----------------------------------------------------------------------===//

#include "Stage/Support/SymExpr.h"

#include "gtest/gtest.h"

#include <random>

using namespace sym;

namespace {

constexpr int kIterations = 3000;
const char *const kSymbols[] = {"B", "S", "D", "tp", "dp", "x"};

class Generator {
public:
  explicit Generator(unsigned seed) : rng(seed) {}

  int uniform(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  }

  Monomial monomial() {
    Monomial m;
    int n = uniform(0, 3);
    for (int i = 0; i < n; ++i)
      m = m * Monomial::symbol(kSymbols[uniform(0, 5)], uniform(-2, 2));
    return m;
  }

  Rational coefficient() {
    int num = uniform(-9, 9);
    if (num == 0)
      num = 1;
    return Rational(BigInt(num), BigInt(uniform(1, 4)));
  }

  Expr expr() {
    Expr e;
    int n = uniform(0, 4);
    for (int i = 0; i < n; ++i)
      e += Expr::monomial(monomial(), coefficient());
    return e;
  }

  /// A nonzero monomial divisor.
  Expr divisor() { return Expr::monomial(monomial(), coefficient()); }

  Bindings bindings() {
    Bindings b;
    for (const char *s : kSymbols) {
      int v = uniform(-7, 7);
      b[s] = v == 0 ? 3 : v;
    }
    return b;
  }

private:
  std::mt19937 rng;
};

Rational eval(const Expr &e, const Bindings &b) {
  Result<Rational> r = e.evaluateRational(b);
  EXPECT_TRUE(bool(r)) << e.str() << ": " << r.error();
  return r ? *r : Rational();
}

TEST(SymExprProperty, RingLawsHoldStructurally) {
  Generator g(20261202);
  for (int i = 0; i < kIterations; ++i) {
    Expr x = g.expr(), y = g.expr(), z = g.expr();
    ASSERT_EQ(x * (y + z), x * y + x * z) << x.str() << " | " << y.str();
    ASSERT_EQ((x + y) * z, x * z + y * z);
    ASSERT_EQ(x + y, y + x);
    ASSERT_EQ(x * y, y * x);
    ASSERT_EQ((x + y) + z, x + (y + z));
    ASSERT_EQ((x * y) * z, x * (y * z));
    ASSERT_TRUE((x - x).isZero());
    ASSERT_EQ(x - y, -(y - x));
    Expr d = g.divisor();
    ASSERT_EQ(*(x * d).div(d), x);
    ASSERT_EQ(*(x + y).div(d), *x.div(d) + *y.div(d));
    ASSERT_EQ(*x.pow(2), x * x);
    ASSERT_EQ(*d.pow(-1) * d, Expr(1));
  }
}

TEST(SymExprProperty, PrintParseRoundTrip) {
  Generator g(7);
  for (int i = 0; i < kIterations; ++i) {
    Expr x = g.expr();
    Result<Expr> back = Expr::parse(x.str());
    ASSERT_TRUE(bool(back)) << x.str() << ": " << back.error();
    ASSERT_EQ(*back, x) << x.str() << " reparsed as " << back->str();
    ASSERT_EQ(back->hash(), x.hash());
  }
}

TEST(SymExprProperty, EvaluationCommutesWithOperations) {
  Generator g(42);
  for (int i = 0; i < kIterations; ++i) {
    Expr x = g.expr(), y = g.expr();
    Expr d = g.divisor();
    Bindings b = g.bindings();
    Rational vx = eval(x, b), vy = eval(y, b), vd = eval(d, b);
    ASSERT_EQ(eval(x + y, b), vx + vy);
    ASSERT_EQ(eval(x - y, b), vx - vy);
    ASSERT_EQ(eval(x * y, b), vx * vy);
    ASSERT_EQ(eval(-x, b), -vx);
    ASSERT_EQ(eval(*x.div(d), b), vx / vd);
    int k = g.uniform(0, 3);
    Rational p(1);
    for (int j = 0; j < k; ++j)
      p = p * vx;
    ASSERT_EQ(eval(*x.pow(k), b), p);
  }
}

TEST(SymExprProperty, SubstitutionCommutesWithEvaluation) {
  Generator g(99);
  for (int i = 0; i < kIterations; ++i) {
    Expr x = g.expr();
    Bindings b = g.bindings();
    // Replace `x` by a monomial (always allowed) and `B` by a binding.
    Expr m = g.divisor();
    Substitution s{{"x", m}};
    Result<Expr> sx = x.substitute(s);
    ASSERT_TRUE(bool(sx)) << sx.error();
    Bindings bx = b;
    Rational vm = eval(m, b);
    ASSERT_EQ(eval(*sx, b),
              eval(*x.substitute({{"x", Expr(vm)}}), b));
    // Partial binding then full evaluation equals full evaluation.
    Result<Expr> partial = x.bind({{"B", b["B"]}, {"tp", b["tp"]}});
    ASSERT_TRUE(bool(partial));
    ASSERT_FALSE(partial->symbols().count("B"));
    ASSERT_EQ(eval(*partial, b), eval(x, b));
  }
}

TEST(SymExprProperty, IntegerEvaluationAgreesWithRational) {
  Generator g(5);
  int integral = 0;
  for (int i = 0; i < kIterations; ++i) {
    Expr x = g.expr();
    Bindings b = g.bindings();
    Rational v = eval(x, b);
    Result<int64_t> iv = x.evaluate(b);
    ASSERT_EQ(bool(iv), v.isInteger()) << x.str();
    if (iv) {
      ++integral;
      ASSERT_EQ(Rational(*iv), v);
    } else {
      ASSERT_NE(iv.error().find("is not an integer"), std::string::npos);
    }
  }
  EXPECT_GT(integral, kIterations / 10); // both outcomes are exercised
}

} // namespace
