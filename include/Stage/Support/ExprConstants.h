//===- ExprConstants.h - Constants an expression can print ------*- C++ -*-===//
//
// An expression prints its constants as integers, and the parsers read
// integers of 64 bits: a parsed expression whose constants grew beyond
// that (`31^31`, `4294967296*4294967296`) would not read back. Both
// parsers (the string one and the MLIR attribute one) refuse it.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_EXPRCONSTANTS_H
#define STAGE_SUPPORT_EXPRCONSTANTS_H

#include "Stage/Support/SymExpr.h"

#include <optional>
#include <string>

namespace sym {

/// Why `e` cannot be printed and read back (a constant beyond 64 bits),
/// or nothing.
std::optional<std::string> getUnprintableConstant(const Expr &e);

} // namespace sym

#endif // STAGE_SUPPORT_EXPRCONSTANTS_H
