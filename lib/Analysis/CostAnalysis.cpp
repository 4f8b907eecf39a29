//===- CostAnalysis.cpp - Symbolic cost of a program ----------------------===//

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

using namespace mlir;
using namespace mlir::stage;

sym::Expr mlir::stage::getExecutionCount(Operation *op, Operation *root) {
  sym::Expr n(1);
  for (Operation *p = op->getParentOp(); p && p != root; p = p->getParentOp()) {
    if (auto rep = dyn_cast<RepeatOp>(p))
      n *= rep.getCount().getValue();
    if (auto mb = dyn_cast<MicrobatchesOp>(p))
      n *= mb.getCount().getValue();
  }
  return n;
}

Phase mlir::stage::getPhase(Operation *op) {
  if (isa<OptimizerStepOp>(op))
    return Phase::Optimizer;
  if (isa<MicrobatchesOp>(op))
    return Phase::Backward; // gradient accumulation
  if (isRecomputation(op))
    return Phase::Recompute;
  for (Operation *p = op; p; p = p->getParentOp()) {
    Operation *parent = p->getParentOp();
    if (auto mb = dyn_cast_or_null<MicrobatchesOp>(parent))
      return p->getParentRegion() == &mb.getBackward() ? Phase::Backward
                                                       : Phase::Forward;
  }
  return Phase::Forward;
}

PhaseCosts mlir::stage::getPhaseCosts(Operation *root) {
  PhaseCosts pc;
  walkWithCounts(root, [&](Operation *op, const sym::Expr &n) {
    auto c = dyn_cast<CostOpInterface>(op);
    if (!c)
      return;
    Cost cost = c.getCost().scaled(n);
    Phase phase = getPhase(op);
    // The score matrix a flash-attention backward recomputes is part of
    // that kernel's cost, whatever the recomputation policy.
    if (phase == Phase::Backward)
      pc.attentionKernelRecomputeFlops += cost.recomputedFlops;
    pc.of(phase) += cost;
  });
  return pc;
}

static void walkBlock(Block &block, const sym::Expr &count,
                      function_ref<void(Operation *, const sym::Expr &)> fn) {
  for (Operation &op : block) {
    fn(&op, count);
    sym::Expr inner = count;
    if (auto rep = dyn_cast<RepeatOp>(op))
      inner = count * rep.getCount().getValue();
    if (auto mb = dyn_cast<MicrobatchesOp>(op))
      inner = count * mb.getCount().getValue();
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

const char *mlir::stage::getPhaseName(Phase p) {
  switch (p) {
  case Phase::Forward:
    return "forward";
  case Phase::Backward:
    return "backward";
  case Phase::Recompute:
    return "recompute";
  case Phase::Optimizer:
    return "optimizer";
  }
  return "";
}
