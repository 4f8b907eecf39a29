//===- RewriteHelpers.cpp - What the graph rewrites share -----------------===//

#include "RewriteHelpers.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

std::optional<SmallVector<unsigned>>
mlir::stage::mergeGroups(ArrayRef<Expr> from, ArrayRef<Expr> to) {
  const Expr one(1);
  SmallVector<unsigned> groups;
  unsigned i = 0;
  for (const Expr &target : to) {
    if (target == one && (i == from.size() || from[i] != one)) {
      groups.push_back(0);
      continue;
    }
    if (i == from.size())
      return std::nullopt;
    Expr p = from[i];
    unsigned n = 1;
    while (p != target && i + n < from.size())
      p *= from[i + n++];
    if (p != target)
      return std::nullopt;
    groups.push_back(n);
    i += n;
  }
  for (; i < from.size(); ++i) {
    if (from[i] != one || groups.empty())
      return std::nullopt;
    ++groups.back();
  }
  return groups;
}

Value mlir::stage::cloneOn(Operation *op, ValueRange inputs, Type type,
                           OpBuilder &b) {
  Operation *copy = b.clone(*op);
  copy->setOperands(inputs);
  copy->getResult(0).setType(type);
  return copy->getResult(0);
}
