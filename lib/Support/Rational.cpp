//===- Rational.cpp - Exact rational numbers ------------------------------===//

#include "Stage/Support/Rational.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace sym;

Rational::Rational(BigInt n, BigInt d) : num(std::move(n)), den(std::move(d)) {
  if (den < 0) {
    num = -num;
    den = -den;
  }
  BigInt g = llvm::gcd(llvm::abs(num), den);
  if (g > 1) {
    num /= g;
    den /= g;
  }
  if (num == 0)
    den = BigInt(1);
}

Rational Rational::operator-() const {
  Rational r;
  r.num = -num;
  r.den = den;
  return r;
}

Rational Rational::operator+(const Rational &o) const {
  if (den == 1 && o.den == 1) {
    Rational r;
    r.num = num + o.num;
    return r;
  }
  return Rational(num * o.den + o.num * den, den * o.den);
}

Rational Rational::operator-(const Rational &o) const { return *this + (-o); }

Rational Rational::operator*(const Rational &o) const {
  if (den == 1 && o.den == 1) {
    Rational r;
    r.num = num * o.num;
    if (r.num == 0)
      r.den = BigInt(1);
    return r;
  }
  return Rational(num * o.num, den * o.den);
}

Rational Rational::operator/(const Rational &o) const {
  return Rational(num * o.den, den * o.num);
}

bool Rational::operator<(const Rational &o) const {
  return num * o.den < o.num * den;
}

std::optional<int64_t> sym::toInt64(const BigInt &v) {
  if (v > BigInt(INT64_MAX) || v < BigInt(INT64_MIN))
    return std::nullopt;
  return int64_t(v);
}

std::optional<int64_t> Rational::toInt64() const {
  if (den != 1)
    return std::nullopt;
  return sym::toInt64(num);
}

std::optional<int64_t> Rational::ceilToInt64() const {
  return sym::toInt64(llvm::ceilDiv(num, den));
}

double Rational::toDouble() const {
  // Exact enough for reports: convert through decimal strings only when huge.
  auto n = sym::toInt64(num), d = sym::toInt64(den);
  if (n && d)
    return double(*n) / double(*d);
  return std::stod(toString(num)) / std::stod(toString(den));
}

std::string sym::toString(const BigInt &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  return s;
}

std::string Rational::str() const {
  if (den == 1)
    return toString(num);
  return toString(num) + "/" + toString(den);
}
