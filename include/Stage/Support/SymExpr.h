//===- SymExpr.h - Symbolic integer expressions -----------------*- C++ -*-===//
//
// A symbolic expression is a canonical sum of terms; each term is a nonzero
// rational coefficient times a monomial, a product of named symbols with
// nonzero integer exponents. `2*B*S*D/tp` and `B*S/(M*dp) + H*Dh` are
// expressions. Shapes before and after sharding and the FLOP and byte counts
// of a program are all expressions, so passes never need concrete sizes.
//
// Equality is structural on the canonical form: two expressions are equal iff
// they are equal as rational functions of this restricted (Laurent polynomial)
// shape. Division is only by monomials; dividing by a sum is an error, since
// the result would leave the canonical form.
//
// This library depends on LLVM Support only (for arbitrary-precision
// integers), not on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_SYMEXPR_H
#define STAGE_SUPPORT_SYMEXPR_H

#include "Stage/Support/Rational.h"

#include "llvm/ADT/Hashing.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sym {

/// A value or an error message, for operations that user input can make fail.
template <typename T>
class Result {
public:
  Result(T v) : val(std::move(v)) {} // NOLINT: implicit by design
  static Result failure(std::string message) {
    Result r;
    r.message = std::move(message);
    return r;
  }
  explicit operator bool() const { return val.has_value(); }
  const T &operator*() const { return *val; }
  T &operator*() { return *val; }
  const T *operator->() const { return &*val; }
  const std::string &error() const { return message; }

private:
  Result() = default;
  std::optional<T> val;
  std::string message;
};

/// The order symbols are printed in within a term: well-known model symbols
/// first (so `2*B*S*D/tp` prints as written), then the rest by name.
int symbolRank(const std::string &name);
bool symbolLess(const std::string &a, const std::string &b);

/// A product of symbols with nonzero integer exponents, sorted by symbolLess.
class Monomial {
public:
  using Factor = std::pair<std::string, int>;

  Monomial() = default;
  static Monomial symbol(const std::string &name, int exponent = 1);

  const std::vector<Factor> &factors() const { return fs; }
  bool isOne() const { return fs.empty(); }
  /// Sum of positive exponents (the numerator degree).
  int degree() const;
  /// Exponent of `name` (0 when absent).
  int exponent(const std::string &name) const;

  Monomial operator*(const Monomial &o) const;
  Monomial inverse() const;
  Monomial pow(int n) const;

  bool operator==(const Monomial &o) const { return fs == o.fs; }
  bool operator!=(const Monomial &o) const { return fs != o.fs; }
  /// The print order of terms: higher degree first, then by factors.
  bool operator<(const Monomial &o) const;

private:
  std::vector<Factor> fs;
};

class Expr;
using Bindings = std::map<std::string, int64_t>;
using Substitution = std::map<std::string, Expr>;

/// The most terms parsing or a power expands a product of sums to, the
/// highest power of a sum, and the most term products one parse (or one
/// power) computes in all when it expands products of sums: real sizes have a
/// few terms; a short text must not ask for an astronomical expansion, nor for
/// many large ones.
constexpr size_t kMaxExpandedTerms = 1000;
constexpr int kMaxSumPower = 64;
constexpr size_t kMaxExpansionWork = 10000;
/// The largest coefficient (numerator or denominator, in magnitude) a parse
/// or a power builds, in bits: sizes and costs have small ones, and a short
/// text must not ask for numbers of millions of digits
/// (`((35^1024)^1024)^1024`), whose every product takes seconds.
constexpr unsigned kMaxCoefficientBits = 1024;
/// The largest exponent (in magnitude) of a symbol a parse or a power
/// builds: sizes have squares and cubes, and `S^1200` prints as 1200 factors.
constexpr int kMaxExponent = 64;

class Expr {
public:
  struct Term {
    Monomial mono;
    Rational coef;
    bool operator==(const Term &o) const {
      return mono == o.mono && coef == o.coef;
    }
  };

  /// Zero.
  Expr() = default;
  Expr(int64_t c); // NOLINT: implicit by design
  Expr(const Rational &c); // NOLINT: implicit by design
  static Expr symbol(const std::string &name);
  static Expr monomial(const Monomial &m, const Rational &c = Rational(1));

  /// Parses `2*B*S*D/tp`, `(H + 2*KV)*Dh`, `S^2`; `^` takes an integer
  /// exponent. Errors name the offending position.
  static Result<Expr> parse(const std::string &text);

  const std::vector<Term> &terms() const { return ts; }
  bool isZero() const { return ts.empty(); }
  bool isConstant() const;
  /// The value of a constant expression.
  std::optional<Rational> getConstant() const;
  bool isMonomial() const { return ts.size() == 1; }
  /// True for exactly the expression `name`.
  bool isSymbol(const std::string &name) const;
  /// The name when the expression is a single symbol with coefficient 1.
  std::optional<std::string> getSymbol() const;
  std::set<std::string> symbols() const;

  Expr operator-() const;
  Expr operator+(const Expr &o) const;
  Expr operator-(const Expr &o) const;
  Expr operator*(const Expr &o) const;
  Expr &operator+=(const Expr &o) { return *this = *this + o; }
  Expr &operator-=(const Expr &o) { return *this = *this - o; }
  Expr &operator*=(const Expr &o) { return *this = *this * o; }

  /// Division by a monomial (or a nonzero constant). Dividing by a sum or by
  /// zero fails.
  Result<Expr> div(const Expr &divisor) const;
  /// Division that the caller knows to be by a monomial; aborts otherwise.
  Expr divExact(const Expr &divisor) const;
  /// Integer powers; negative exponents only for monomials.
  /// `work`, when given, adds up the term products computed across calls
  /// (a parse's); the power fails once they pass kMaxExpansionWork.
  Result<Expr> pow(int n, size_t *work = nullptr) const;
  /// Why this expression is beyond what a parse or a power builds (a
  /// coefficient above kMaxCoefficientBits or an exponent above
  /// kMaxExponent), or "" when it is not.
  std::string limitError() const;

  /// Replaces the symbols in `s` by their expressions; other symbols stay.
  /// Fails when a symbol with a negative exponent is replaced by a sum.
  Result<Expr> substitute(const Substitution &s) const;
  /// Replaces bound symbols by their values; the rest stays symbolic.
  Result<Expr> bind(const Bindings &b) const;
  /// The sum of the expression over `var` = 0, 1, ..., `count` - 1, in
  /// closed form (Faulhaber): a decode step's cost summed over the steps.
  /// Fails when `var` divides.
  Result<Expr> sumOver(const std::string &var, const Expr &count) const;

  /// Exact rational value under `b`; fails on an unbound symbol or a zero
  /// symbol under a negative exponent.
  Result<Rational> evaluateRational(const Bindings &b) const;
  /// Exact integer value under `b`; fails also when the value is not an
  /// integer (`H/tp = 64/3 is not an integer: tp must divide H`) or does not
  /// fit in 64 bits.
  Result<int64_t> evaluate(const Bindings &b) const;

  bool operator==(const Expr &o) const { return ts == o.ts; }
  bool operator!=(const Expr &o) const { return !(ts == o.ts); }
  /// A total order on canonical forms (for deterministic containers).
  bool operator<(const Expr &o) const;

  /// The canonical text: terms by decreasing degree, `-` for negative terms,
  /// repeated factors for powers (`S*S`), parenthesized denominators.
  std::string str() const;
  size_t hash() const;

  /// The sum of `terms` in any order, like monomials combined: one sort,
  /// where adding them one by one merges quadratically many terms.
  static Expr fromTerms(std::vector<Term> terms);

private:
  static Expr fromSortedTerms(std::vector<Term> terms);
  std::vector<Term> ts; // sorted by Monomial order, nonzero coefficients
};

inline std::string toString(const Expr &e) { return e.str(); }
inline llvm::hash_code hash_value(const Expr &e) { return e.hash(); }

/// Sum of the given expressions (0 for an empty list), in one sort.
Expr sum(const std::vector<Expr> &addends);

/// Product of the given expressions (1 for an empty list).
Expr product(const std::vector<Expr> &factors);

/// The error of an expansion above kMaxExpansionWork.
std::string expansionWorkError();

/// The part of a diagnostic that explains why `e = value` is not an integer:
/// "tp must divide H" for monomials, empty otherwise.
std::string divisibilityHint(const Expr &e);

//===----------------------------------------------------------------------===//
// Parsing over any token source
//===----------------------------------------------------------------------===//

/// The grammar of expressions, written once and used by the string parser
/// here and by the MLIR attribute parser. `Lexer` provides:
///   bool punct(char c);              // consume `c` if next
///   bool identifier(std::string &);  // consume a symbol name if next
///   bool integer(int64_t &);         // consume an unsigned integer if next
///   bool fail(const std::string &);  // report an error, returns false
template <typename Lexer>
class ExprGrammar {
public:
  explicit ExprGrammar(Lexer &lex) : lex(lex) {}

  bool parseExpr(Expr &out) {
    bool negate = false;
    if (lex.punct('-'))
      negate = true;
    else
      (void)lex.punct('+');
    Expr term;
    if (!parseTerm(term))
      return false;
    // Summed once at the end: a long printed sum reads in n log n.
    std::vector<Expr> addends{negate ? -term : term};
    while (true) {
      if (lex.punct('+')) {
        if (!parseTerm(term))
          return false;
        addends.push_back(term);
      } else if (lex.punct('-')) {
        if (!parseTerm(term))
          return false;
        addends.push_back(-term);
      } else {
        out = sum(addends);
        return true;
      }
    }
  }

private:
  bool parseTerm(Expr &out) {
    if (!parseFactor(out))
      return false;
    while (true) {
      Expr rhs;
      if (lex.punct('*')) {
        if (!parseFactor(rhs))
          return false;
        size_t products = out.terms().size() * rhs.terms().size();
        if (products > kMaxExpandedTerms)
          return lex.fail("the product expands to more than " +
                          std::to_string(kMaxExpandedTerms) + " terms");
        // Only expansions count: a printed form multiplies monomials alone
        // (`e*e*...` for e^-700) and must always read back.
        if (products > 1 && (work += products) > kMaxExpansionWork)
          return lex.fail(expansionWorkError());
        out *= rhs;
      } else if (lex.punct('/')) {
        if (!parseFactor(rhs))
          return false;
        Result<Expr> q = out.div(rhs);
        if (!q)
          return lex.fail(q.error());
        out = *q;
      } else {
        return true;
      }
      std::string limit = out.limitError();
      if (!limit.empty())
        return lex.fail(limit);
    }
  }

  bool parseFactor(Expr &out) {
    if (lex.punct('-')) {
      if (!parseFactor(out))
        return false;
      out = -out;
      return true;
    }
    if (!parsePrimary(out))
      return false;
    if (lex.punct('^')) {
      bool negative = lex.punct('-');
      int64_t n;
      if (!lex.integer(n))
        return lex.fail("expected an integer exponent after '^'");
      if (n > 1024)
        return lex.fail("exponent " + std::to_string(n) + " is too large");
      Result<Expr> p = out.pow(negative ? -int(n) : int(n), &work);
      if (!p)
        return lex.fail(p.error());
      out = *p;
    }
    return true;
  }

  bool parsePrimary(Expr &out) {
    int64_t n;
    std::string name;
    if (lex.integer(n)) {
      out = Expr(n);
      return true;
    }
    if (lex.identifier(name)) {
      out = Expr::symbol(name);
      return true;
    }
    if (lex.punct('(')) {
      if (!parseExpr(out))
        return false;
      if (!lex.punct(')'))
        return lex.fail("expected ')'");
      return true;
    }
    return lex.fail("expected an integer, a symbol or '('");
  }

  Lexer &lex;
  /// The term products this parse has computed (kMaxExpansionWork).
  size_t work = 0;
};

} // namespace sym

template <>
struct std::hash<sym::Expr> {
  size_t operator()(const sym::Expr &e) const { return e.hash(); }
};

#endif // STAGE_SUPPORT_SYMEXPR_H
