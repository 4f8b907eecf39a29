//===- FuzzSymExpr.cpp - libFuzzer target: symbolic expressions -----------===//
//
// Any bytes as a symbolic expression (`B*S/tp + 2*D`): parsed, and when it
// parses, printed and parsed again to the same expression, and evaluated
// under small bindings. A parse error is fine; a crash, a hang or a
// printed form that reads back as another expression is a bug.
//
//===----------------------------------------------------------------------===//

#include "Stage/Support/SymExpr.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096)
    return 0;
  std::string text(reinterpret_cast<const char *>(data), size);
  sym::Result<sym::Expr> e = sym::Expr::parse(text);
  if (!e)
    return 0;
  std::string printed = e->str();
  sym::Result<sym::Expr> again = sym::Expr::parse(printed);
  if (!again || !(*again == *e))
    abort(); // the printed form does not read back
  sym::Bindings b;
  for (const std::string &s : e->symbols())
    b[s] = int64_t(s.size() % 7) + 1;
  (void)e->evaluateRational(b);
  (void)e->evaluate(b);
  return 0;
}
