//===- Rational.h - Exact rational numbers ----------------------*- C++ -*-===//
//
// Arbitrary-precision rationals for the coefficients of symbolic expressions.
// Algebra never overflows; only the final conversion to a machine integer can.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_RATIONAL_H
#define STAGE_SUPPORT_RATIONAL_H

#include "llvm/ADT/DynamicAPInt.h"

#include <cstdint>
#include <optional>
#include <string>

namespace sym {

using BigInt = llvm::DynamicAPInt;

/// A normalized fraction: gcd(num, den) == 1 and den > 0.
class Rational {
public:
  Rational() : num(0), den(1) {}
  Rational(int64_t n) : num(n), den(1) {} // NOLINT: implicit by design
  Rational(BigInt n, BigInt d);

  const BigInt &numerator() const { return num; }
  const BigInt &denominator() const { return den; }

  bool isZero() const { return num == 0; }
  bool isOne() const { return num == 1 && den == 1; }
  bool isInteger() const { return den == 1; }
  bool isNegative() const { return num < 0; }

  Rational operator-() const;
  Rational operator+(const Rational &o) const;
  Rational operator-(const Rational &o) const;
  Rational operator*(const Rational &o) const;
  /// Precondition: `o` is not zero.
  Rational operator/(const Rational &o) const;
  Rational abs() const { return isNegative() ? -*this : *this; }

  bool operator==(const Rational &o) const {
    return num == o.num && den == o.den;
  }
  bool operator!=(const Rational &o) const { return !(*this == o); }
  bool operator<(const Rational &o) const;

  /// The integer value when integral and within 64 bits.
  std::optional<int64_t> toInt64() const;
  /// The smallest integer >= this value, when it fits in 64 bits.
  std::optional<int64_t> ceilToInt64() const;
  double toDouble() const;

  /// `3`, `-7/2`.
  std::string str() const;

private:
  BigInt num, den;
};

std::string toString(const BigInt &v);
std::optional<int64_t> toInt64(const BigInt &v);

} // namespace sym

#endif // STAGE_SUPPORT_RATIONAL_H
