//===- CostAnalysis.cpp - Symbolic cost of a program ----------------------===//

#include "Stage/Analysis/CostAnalysis.h"

using namespace mlir;
using namespace mlir::stage;

sym::Expr mlir::stage::getExecutionCount(Operation *op, Operation *root) {
  sym::Expr n(1);
  for (Operation *p = op->getParentOp(); p && p != root; p = p->getParentOp())
    if (auto rep = dyn_cast<RepeatOp>(p))
      n *= rep.getCount().getValue();
  return n;
}

static void walkBlock(Block &block, const sym::Expr &count,
                      function_ref<void(Operation *, const sym::Expr &)> fn) {
  for (Operation &op : block) {
    fn(&op, count);
    sym::Expr inner = count;
    if (auto rep = dyn_cast<RepeatOp>(op))
      inner = count * rep.getCount().getValue();
    for (Region &r : op.getRegions())
      for (Block &b : r)
        walkBlock(b, inner, fn);
  }
}

void mlir::stage::walkWithCounts(
    Operation *root, function_ref<void(Operation *, const sym::Expr &)> fn) {
  for (Region &r : root->getRegions())
    for (Block &b : r)
      walkBlock(b, sym::Expr(1), fn);
}

Cost mlir::stage::getTotalCost(Operation *root) {
  Cost total;
  walkWithCounts(root, [&](Operation *op, const sym::Expr &n) {
    if (auto c = dyn_cast<CostOpInterface>(op))
      total += c.getCost().scaled(n);
  });
  return total;
}
