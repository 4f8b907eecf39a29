//===- StageTypeRewriting.cpp - Rewriting a graph's types in place -------===//

#include "Stage/Dialect/Stage/IR/StageTypeRewriting.h"

using namespace mlir;
using namespace mlir::stage;

void mlir::stage::rewriteTensorTypes(
    Operation *root, function_ref<SymTensorType(SymTensorType)> fn) {
  auto rewrite = [&](Value v) {
    if (auto t = dyn_cast<SymTensorType>(v.getType()))
      v.setType(fn(t));
  };
  root->walk([&](Operation *op) {
    for (Value r : op->getResults())
      rewrite(r);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          rewrite(arg);
  });
}

static sym::Expr substituted(const sym::Expr &e, const sym::Substitution &s) {
  sym::Result<sym::Expr> r = e.substitute(s);
  // Substitutions here replace a symbol by a monomial, which cannot fail.
  return r ? *r : e;
}

void mlir::stage::substituteSymbols(Operation *root,
                                    const sym::Substitution &s) {
  rewriteTensorTypes(root, [&](SymTensorType t) {
    SmallVector<sym::Expr> dims;
    for (const sym::Expr &d : t.getDims())
      dims.push_back(substituted(d, s));
    return t.withDims(dims);
  });
  root->walk([&](Operation *op) {
    for (NamedAttribute na : op->getAttrs())
      if (auto e = dyn_cast<ExprAttr>(na.getValue()))
        op->setAttr(na.getName(),
                    ExprAttr::get(op->getContext(), substituted(e.getValue(), s)));
  });
}

void mlir::stage::convertFloatsToF32(Operation *root) {
  Type f32 = Float32Type::get(root->getContext());
  rewriteTensorTypes(root, [&](SymTensorType t) {
    return isa<FloatType>(t.getElementType()) ? t.withElementType(f32) : t;
  });
}
