//===- SymExpr.cpp - Symbolic integer expressions -------------------------===//

#include "Stage/Support/SymExpr.h"

#include "Stage/Support/ExprConstants.h"

#include "llvm/ADT/Hashing.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

using namespace sym;

//===----------------------------------------------------------------------===//
// Symbol order
//===----------------------------------------------------------------------===//

int sym::symbolRank(const std::string &name) {
  // Model symbols in the order people write them, then everything else, then
  // the parallel degrees (outermost first), which mostly appear as divisors.
  static const char *const known[] = {
      "L", "B", "S", "D", "H", "KV", "Dh", "Dv", "F", "V", "E", "K", "M"};
  static const char *const axes[] = {"pp", "dp", "cp", "ep", "tp", "vp"};
  for (unsigned i = 0; i < std::size(known); ++i)
    if (name == known[i])
      return int(i);
  for (unsigned i = 0; i < std::size(axes); ++i)
    if (name == axes[i])
      return 200 + int(i);
  return 100;
}

bool sym::symbolLess(const std::string &a, const std::string &b) {
  int ra = symbolRank(a), rb = symbolRank(b);
  if (ra != rb)
    return ra < rb;
  return a < b;
}

//===----------------------------------------------------------------------===//
// Monomial
//===----------------------------------------------------------------------===//

Monomial Monomial::symbol(const std::string &name, int exponent) {
  Monomial m;
  if (exponent != 0)
    m.fs.push_back({name, exponent});
  return m;
}

int Monomial::degree() const {
  int d = 0;
  for (const Factor &f : fs)
    if (f.second > 0)
      d += f.second;
  return d;
}

int Monomial::exponent(const std::string &name) const {
  for (const Factor &f : fs)
    if (f.first == name)
      return f.second;
  return 0;
}

Monomial Monomial::operator*(const Monomial &o) const {
  Monomial r;
  r.fs.reserve(fs.size() + o.fs.size());
  size_t i = 0, j = 0;
  while (i < fs.size() || j < o.fs.size()) {
    if (j == o.fs.size() ||
        (i < fs.size() && symbolLess(fs[i].first, o.fs[j].first))) {
      r.fs.push_back(fs[i++]);
    } else if (i == fs.size() || symbolLess(o.fs[j].first, fs[i].first)) {
      r.fs.push_back(o.fs[j++]);
    } else {
      int e = fs[i].second + o.fs[j].second;
      if (e != 0)
        r.fs.push_back({fs[i].first, e});
      ++i;
      ++j;
    }
  }
  return r;
}

Monomial Monomial::inverse() const {
  Monomial r = *this;
  for (Factor &f : r.fs)
    f.second = -f.second;
  return r;
}

Monomial Monomial::pow(int n) const {
  if (n == 0)
    return Monomial();
  Monomial r = *this;
  for (Factor &f : r.fs)
    f.second *= n;
  return r;
}

bool Monomial::operator<(const Monomial &o) const {
  int da = degree(), db = o.degree();
  if (da != db)
    return da > db;
  size_t n = std::min(fs.size(), o.fs.size());
  for (size_t i = 0; i < n; ++i) {
    if (fs[i].first != o.fs[i].first)
      return symbolLess(fs[i].first, o.fs[i].first);
    if (fs[i].second != o.fs[i].second)
      return fs[i].second > o.fs[i].second;
  }
  return fs.size() > o.fs.size();
}

//===----------------------------------------------------------------------===//
// Expr construction and queries
//===----------------------------------------------------------------------===//

Expr::Expr(int64_t c) : Expr(Rational(c)) {}

Expr::Expr(const Rational &c) {
  if (!c.isZero())
    ts.push_back({Monomial(), c});
}

Expr Expr::symbol(const std::string &name) {
  return monomial(Monomial::symbol(name));
}

Expr Expr::monomial(const Monomial &m, const Rational &c) {
  Expr e;
  if (!c.isZero())
    e.ts.push_back({m, c});
  return e;
}

Expr Expr::fromSortedTerms(std::vector<Term> terms) {
  Expr e;
  e.ts = std::move(terms);
  return e;
}

bool Expr::isConstant() const {
  return ts.empty() || (ts.size() == 1 && ts[0].mono.isOne());
}

std::optional<Rational> Expr::getConstant() const {
  if (ts.empty())
    return Rational(0);
  if (ts.size() == 1 && ts[0].mono.isOne())
    return ts[0].coef;
  return std::nullopt;
}

bool Expr::isSymbol(const std::string &name) const {
  std::optional<std::string> s = getSymbol();
  return s && *s == name;
}

std::optional<std::string> Expr::getSymbol() const {
  if (ts.size() != 1 || !ts[0].coef.isOne())
    return std::nullopt;
  const auto &fs = ts[0].mono.factors();
  if (fs.size() != 1 || fs[0].second != 1)
    return std::nullopt;
  return fs[0].first;
}

std::set<std::string> Expr::symbols() const {
  std::set<std::string> out;
  for (const Term &t : ts)
    for (const auto &f : t.mono.factors())
      out.insert(f.first);
  return out;
}

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

Expr Expr::operator-() const {
  Expr r = *this;
  for (Term &t : r.ts)
    t.coef = -t.coef;
  return r;
}

Expr Expr::operator+(const Expr &o) const {
  std::vector<Term> out;
  out.reserve(ts.size() + o.ts.size());
  size_t i = 0, j = 0;
  while (i < ts.size() || j < o.ts.size()) {
    if (j == o.ts.size() || (i < ts.size() && ts[i].mono < o.ts[j].mono)) {
      out.push_back(ts[i++]);
    } else if (i == ts.size() || o.ts[j].mono < ts[i].mono) {
      out.push_back(o.ts[j++]);
    } else {
      Rational c = ts[i].coef + o.ts[j].coef;
      if (!c.isZero())
        out.push_back({ts[i].mono, c});
      ++i;
      ++j;
    }
  }
  return fromSortedTerms(std::move(out));
}

Expr Expr::operator-(const Expr &o) const { return *this + (-o); }

Expr Expr::operator*(const Expr &o) const {
  if (ts.empty() || o.ts.empty())
    return Expr();
  if (o.ts.size() == 1) {
    // The common case (scaling by a monomial) keeps the order of terms
    // except for re-sorting, which we do once.
    std::vector<Term> out;
    out.reserve(ts.size());
    for (const Term &t : ts)
      out.push_back({t.mono * o.ts[0].mono, t.coef * o.ts[0].coef});
    std::sort(out.begin(), out.end(),
              [](const Term &a, const Term &b) { return a.mono < b.mono; });
    return fromSortedTerms(std::move(out));
  }
  // A product of sums: every pair's product, summed in one sort (m*n
  // log(m*n); summing n partial products merged m*n*n terms).
  std::vector<Term> products;
  products.reserve(ts.size() * o.ts.size());
  for (const Term &a : ts)
    for (const Term &b : o.ts)
      products.push_back({a.mono * b.mono, a.coef * b.coef});
  return fromTerms(std::move(products));
}

Expr Expr::fromTerms(std::vector<Term> terms) {
  std::stable_sort(
      terms.begin(), terms.end(),
      [](const Term &a, const Term &b) { return a.mono < b.mono; });
  std::vector<Term> out;
  for (Term &t : terms) {
    if (!out.empty() && out.back().mono == t.mono)
      out.back().coef = out.back().coef + t.coef;
    else
      out.push_back(std::move(t));
  }
  out.erase(std::remove_if(out.begin(), out.end(),
                           [](const Term &t) { return t.coef.isZero(); }),
            out.end());
  return fromSortedTerms(std::move(out));
}

Expr sym::sum(const std::vector<Expr> &addends) {
  std::vector<Expr::Term> terms;
  for (const Expr &e : addends)
    terms.insert(terms.end(), e.terms().begin(), e.terms().end());
  return Expr::fromTerms(std::move(terms));
}

Result<Expr> Expr::div(const Expr &divisor) const {
  if (divisor.isZero())
    return Result<Expr>::failure("division by zero");
  if (!divisor.isMonomial())
    return Result<Expr>::failure("cannot divide by the sum '" +
                                 divisor.str() +
                                 "': divisors must be monomials");
  const Term &d = divisor.ts[0];
  return *this * monomial(d.mono.inverse(), Rational(1) / d.coef);
}

Expr Expr::divExact(const Expr &divisor) const {
  Result<Expr> r = div(divisor);
  if (!r) {
    fprintf(stderr, "internal error: %s\n", r.error().c_str());
    abort();
  }
  return *r;
}

std::string sym::expansionWorkError() {
  return "the expression expands to more than " +
         std::to_string(kMaxExpansionWork) + " term products";
}

/// Whether `c`'s numerator or denominator exceeds kMaxCoefficientBits.
static bool isHuge(const Rational &c) {
  static const BigInt limit = [] {
    BigInt l(1);
    for (unsigned i = 0; i < kMaxCoefficientBits; i += 32)
      l *= BigInt(int64_t(1) << 32);
    return l;
  }();
  const BigInt &n = c.numerator();
  return n > limit || n < -limit || c.denominator() > limit;
}

static std::string hugeCoefficientError() {
  return "a coefficient exceeds 2^" + std::to_string(kMaxCoefficientBits);
}

/// The error of `m` when an exponent exceeds kMaxExponent, "" otherwise.
static std::string exponentError(const Monomial &m) {
  for (const auto &[name, e] : m.factors())
    if (std::abs(e) > kMaxExponent)
      return "the power of '" + name + "' exceeds " +
             std::to_string(kMaxExponent);
  return "";
}

std::string Expr::limitError() const {
  for (const Term &t : ts) {
    if (isHuge(t.coef))
      return hugeCoefficientError();
    std::string e = exponentError(t.mono);
    if (!e.empty())
      return e;
  }
  return "";
}

Result<Expr> Expr::pow(int n, size_t *work) const {
  if (n < 0) {
    if (!isMonomial())
      return Result<Expr>::failure("cannot raise the sum '" + str() +
                                   "' to a negative power");
    const Term &t = ts[0];
    Rational c(1);
    for (int i = 0; i < -n; ++i) {
      c = c * t.coef;
      if (isHuge(c))
        return Result<Expr>::failure(hugeCoefficientError());
    }
    Monomial m = t.mono.pow(n);
    std::string limit = exponentError(m);
    if (!limit.empty())
      return Result<Expr>::failure(limit);
    return monomial(m, Rational(1) / c);
  }
  // A sum's power expands term by term: bounded, so that a short text
  // cannot ask for an astronomical expansion (found by fuzz-sym-expr).
  if (!isMonomial() && n > kMaxSumPower)
    return Result<Expr>::failure("cannot raise a sum to a power above " +
                                 std::to_string(kMaxSumPower));
  size_t ownWork = 0;
  if (!work)
    work = &ownWork;
  Expr r(1);
  for (int i = 0; i < n; ++i) {
    size_t products = r.ts.size() * ts.size();
    if (products > kMaxExpandedTerms)
      return Result<Expr>::failure("the power expands to more than " +
                                   std::to_string(kMaxExpandedTerms) +
                                   " terms");
    if (products > 1 && (*work += products) > kMaxExpansionWork)
      return Result<Expr>::failure(expansionWorkError());
    r *= *this;
    std::string limit = r.limitError();
    if (!limit.empty())
      return Result<Expr>::failure(limit);
  }
  return r;
}

Expr sym::product(const std::vector<Expr> &factors) {
  Expr r(1);
  for (const Expr &f : factors)
    r *= f;
  return r;
}

//===----------------------------------------------------------------------===//
// Substitution and evaluation
//===----------------------------------------------------------------------===//

Result<Expr> Expr::substitute(const Substitution &s) const {
  Expr sum;
  for (const Term &t : ts) {
    Expr term = Expr(t.coef);
    Monomial kept;
    for (const auto &[name, e] : t.mono.factors()) {
      auto it = s.find(name);
      if (it == s.end()) {
        kept = kept * Monomial::symbol(name, e);
        continue;
      }
      if (e < 0 && !it->second.isMonomial())
        return Result<Expr>::failure(
            "cannot substitute '" + it->second.str() + "' for '" + name +
            "': '" + name + "' divides, and divisors must be monomials");
      Result<Expr> p = it->second.pow(e);
      if (!p)
        return p;
      term *= *p;
    }
    sum += term * monomial(kept);
  }
  return sum;
}

/// The Bernoulli numbers B_0 .. B_p with B_1 = -1/2, the convention of
/// sums from 0 to n - 1.
static std::vector<Rational> bernoulli(int p) {
  std::vector<Rational> b(p + 1);
  for (int m = 0; m <= p; ++m) {
    // sum_{j=0}^{m} C(m+1, j) B_j = 0 for m >= 1, B_0 = 1.
    if (m == 0) {
      b[0] = Rational(1);
      continue;
    }
    Rational acc(0);
    Rational binom(1); // C(m+1, j)
    for (int j = 0; j < m; ++j) {
      acc = acc + binom * b[j];
      binom = binom * Rational(m + 1 - j) / Rational(j + 1);
    }
    b[m] = -acc / Rational(m + 1);
  }
  return b;
}

/// sum_{i=0}^{n-1} i^p = 1/(p+1) sum_{j=0}^{p} C(p+1, j) B_j n^(p+1-j).
static Expr powerSum(int p, const Expr &n) {
  std::vector<Rational> b = bernoulli(p);
  Expr sum;
  Rational binom(1);
  for (int j = 0; j <= p; ++j) {
    sum += Expr(binom * b[j]) * *n.pow(p + 1 - j);
    binom = binom * Rational(p + 1 - j) / Rational(j + 1);
  }
  return sum * Expr(Rational(1) / Rational(p + 1));
}

Result<Expr> Expr::sumOver(const std::string &var, const Expr &count) const {
  Expr sum;
  for (const Term &t : ts) {
    int e = t.mono.exponent(var);
    if (e < 0)
      return Result<Expr>::failure("cannot sum '" + str() + "' over '" + var +
                                   "': '" + var + "' divides");
    Monomial rest = t.mono * Monomial::symbol(var, -e);
    if (e == 0) {
      sum += monomial(rest, t.coef) * count;
      continue;
    }
    sum += monomial(rest, t.coef) * powerSum(e, count);
  }
  return sum;
}

Result<Expr> Expr::bind(const Bindings &b) const {
  Substitution s;
  for (const std::string &name : symbols()) {
    auto it = b.find(name);
    if (it == b.end())
      continue;
    if (it->second == 0)
      for (const Term &t : ts)
        if (t.mono.exponent(name) < 0)
          return Result<Expr>::failure("division by zero: '" + name +
                                       "' is bound to 0 in '" + str() + "'");
    s.emplace(name, Expr(it->second));
  }
  return substitute(s);
}

Result<Rational> Expr::evaluateRational(const Bindings &b) const {
  Rational sum(0);
  for (const Term &t : ts) {
    BigInt num(1), den(1);
    for (const auto &[name, e] : t.mono.factors()) {
      auto it = b.find(name);
      if (it == b.end())
        return Result<Rational>::failure("symbol '" + name +
                                         "' is not bound in '" + str() + "'");
      BigInt v(it->second);
      if (e < 0 && v == 0)
        return Result<Rational>::failure("division by zero: '" + name +
                                         "' is bound to 0 in '" + str() +
                                         "'");
      BigInt p(1);
      for (int i = 0; i < std::abs(e); ++i)
        p *= v;
      if (e > 0)
        num *= p;
      else
        den *= p;
    }
    sum = sum + t.coef * Rational(num, den);
  }
  return sum;
}

/// A monomial's value as the quotient the user wrote, before reduction
/// (`H/tp = 4/8`, not `1/2`), so that both bound values are recognizable.
static std::string unreducedQuotient(const Expr &e, const Bindings &b,
                                     const Rational &value) {
  if (!e.isMonomial())
    return value.str();
  const Expr::Term &t = e.terms()[0];
  BigInt num = t.coef.numerator(), den = t.coef.denominator();
  for (const auto &[name, exp] : t.mono.factors()) {
    BigInt v(b.find(name)->second);
    for (int i = 0; i < std::abs(exp); ++i)
      (exp > 0 ? num : den) *= v;
  }
  return toString(num) + "/" + toString(den);
}

Result<int64_t> Expr::evaluate(const Bindings &b) const {
  Result<Rational> r = evaluateRational(b);
  if (!r)
    return Result<int64_t>::failure(r.error());
  if (!r->isInteger()) {
    std::string msg =
        str() + " = " + unreducedQuotient(*this, b, *r) + " is not an integer";
    std::string hint = divisibilityHint(*this);
    if (!hint.empty())
      msg += ": " + hint;
    return Result<int64_t>::failure(msg);
  }
  std::optional<int64_t> v = r->toInt64();
  if (!v)
    return Result<int64_t>::failure(str() + " = " + r->str() +
                                    " does not fit in 64 bits");
  return *v;
}

std::string sym::divisibilityHint(const Expr &e) {
  if (!e.isMonomial())
    return "";
  const Expr::Term &t = e.terms()[0];
  Expr num = Expr(t.coef.numerator() == 1 ? Rational(1)
                                          : Rational(t.coef.numerator(),
                                                     BigInt(1)));
  Expr den = Expr(Rational(t.coef.denominator(), BigInt(1)));
  for (const auto &[name, exp] : t.mono.factors()) {
    if (exp > 0)
      num *= *Expr::symbol(name).pow(exp);
    else
      den *= *Expr::symbol(name).pow(-exp);
  }
  if (den.isConstant() && den.getConstant()->isOne())
    return "";
  return den.str() + " must divide " + num.str();
}

//===----------------------------------------------------------------------===//
// Ordering, hashing, printing
//===----------------------------------------------------------------------===//

bool Expr::operator<(const Expr &o) const {
  size_t n = std::min(ts.size(), o.ts.size());
  for (size_t i = 0; i < n; ++i) {
    if (ts[i].mono != o.ts[i].mono)
      return ts[i].mono < o.ts[i].mono;
    if (ts[i].coef != o.ts[i].coef)
      return ts[i].coef < o.ts[i].coef;
  }
  return ts.size() < o.ts.size();
}

size_t Expr::hash() const {
  llvm::hash_code h = llvm::hash_value(ts.size());
  for (const Term &t : ts) {
    h = llvm::hash_combine(h, t.coef.numerator(), t.coef.denominator());
    for (const auto &[name, e] : t.mono.factors())
      h = llvm::hash_combine(h, llvm::hash_value(name), e);
  }
  return size_t(h);
}

static std::string termMagnitude(const Expr::Term &t) {
  std::vector<std::string> num, den;
  Rational c = t.coef.abs();
  bool hasPositive = false;
  for (const auto &f : t.mono.factors())
    hasPositive |= f.second > 0;
  if (c.numerator() != 1 || !hasPositive)
    num.push_back(toString(c.numerator()));
  if (c.denominator() != 1)
    den.push_back(toString(c.denominator()));
  for (const auto &[name, e] : t.mono.factors())
    for (int i = 0; i < std::abs(e); ++i)
      (e > 0 ? num : den).push_back(name);
  auto join = [](const std::vector<std::string> &parts) {
    std::string s;
    for (size_t i = 0; i < parts.size(); ++i)
      s += (i ? "*" : "") + parts[i];
    return s;
  };
  std::string s = join(num);
  if (den.size() == 1)
    s += "/" + den[0];
  else if (den.size() > 1)
    s += "/(" + join(den) + ")";
  return s;
}

std::string Expr::str() const {
  if (ts.empty())
    return "0";
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) {
    bool neg = ts[i].coef.isNegative();
    if (i == 0)
      s += neg ? "-" : "";
    else
      s += neg ? " - " : " + ";
    s += termMagnitude(ts[i]);
  }
  return s;
}

//===----------------------------------------------------------------------===//
// String parser
//===----------------------------------------------------------------------===//

namespace {
class StringLexer {
public:
  explicit StringLexer(const std::string &text) : text(text) {}

  bool punct(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool identifier(std::string &out) {
    skipSpace();
    if (pos >= text.size() ||
        !(std::isalpha((unsigned char)text[pos]) || text[pos] == '_'))
      return false;
    size_t start = pos;
    while (pos < text.size() &&
           (std::isalnum((unsigned char)text[pos]) || text[pos] == '_'))
      ++pos;
    out = text.substr(start, pos - start);
    return true;
  }
  bool integer(int64_t &out) {
    skipSpace();
    if (pos >= text.size() || !std::isdigit((unsigned char)text[pos]))
      return false;
    BigInt v(0);
    size_t start = pos;
    while (pos < text.size() && std::isdigit((unsigned char)text[pos]))
      v = v * BigInt(10) + BigInt(text[pos++] - '0');
    std::optional<int64_t> i = toInt64(v);
    if (!i) {
      std::string digits = text.substr(start, pos - start);
      pos = start;
      return fail("integer '" + digits + "' does not fit in 64 bits");
    }
    out = *i;
    return true;
  }
  bool fail(const std::string &msg) {
    if (message.empty())
      message = "at column " + std::to_string(pos + 1) + ": " + msg;
    return false;
  }
  bool atEnd() {
    skipSpace();
    return pos == text.size();
  }
  const std::string &error() const { return message; }
  char peek() const { return pos < text.size() ? text[pos] : '\0'; }

private:
  void skipSpace() {
    while (pos < text.size() && std::isspace((unsigned char)text[pos]))
      ++pos;
  }
  const std::string &text;
  size_t pos = 0;
  std::string message;
};
} // namespace

Result<Expr> Expr::parse(const std::string &text) {
  StringLexer lex(text);
  ExprGrammar<StringLexer> grammar(lex);
  Expr e;
  if (!grammar.parseExpr(e))
    return Result<Expr>::failure(lex.error());
  if (!lex.atEnd()) {
    lex.fail(std::string("unexpected '") + lex.peek() + "'");
    return Result<Expr>::failure(lex.error());
  }
  if (std::optional<std::string> why = getUnprintableConstant(e)) {
    lex.fail(*why);
    return Result<Expr>::failure(lex.error());
  }
  return e;
}

std::optional<std::string> sym::getUnprintableConstant(const Expr &e) {
  auto fits = [](const BigInt &v) { return toInt64(v) && toInt64(-v); };
  for (const Expr::Term &t : e.terms())
    if (!fits(t.coef.numerator()) || !fits(t.coef.denominator()))
      return "the constant " + t.coef.str() + " does not fit in 64 bits";
  return std::nullopt;
}
