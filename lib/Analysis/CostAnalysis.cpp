//===- CostAnalysis.cpp - Symbolic cost of a program ----------------------===//

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

using namespace mlir;
using namespace mlir::stage;

sym::Expr Multiplicity::of(const sym::Expr &perRun) const {
  sym::Expr total = perRun;
  for (const auto &[n, step] : llvm::reverse(levels)) {
    if (step.empty()) {
      total = total * n;
      continue;
    }
    sym::Result<sym::Expr> sum = total.sumOver(step, n);
    // A step symbol in a divisor has no closed-form sum; it stays unbound
    // and evaluating the total reports it.
    total = sum ? *sum : total * n;
  }
  return total;
}

Cost Multiplicity::of(const Cost &c) const {
  return {of(c.contractionFlops), of(c.otherFlops), of(c.bytes),
          of(c.recomputedFlops)};
}

sym::Expr Multiplicity::count() const {
  sym::Expr n(1);
  for (const auto &level : levels)
    n *= level.first;
  return n;
}

sym::Result<double> Multiplicity::countUnder(const sym::Bindings &b) const {
  double n = 1;
  for (const auto &level : levels) {
    sym::Result<sym::Rational> v = level.first.evaluateRational(b);
    if (!v)
      return sym::Result<double>::failure(v.error());
    n *= v->toDouble();
  }
  return n;
}

Multiplicity Multiplicity::nested(const sym::Expr &n, StringRef step) const {
  Multiplicity m = *this;
  m.levels.push_back({n, step.str()});
  return m;
}

Phase mlir::stage::getPhase(Operation *op) {
  // The update, and the arithmetic that only prepares its gradient (the
  // sum of DualPipe's two copies).
  if (isa<OptimizerStepOp>(op) ||
      (isa<EwiseOp>(op) && !op->use_empty() &&
       llvm::all_of(op->getUsers(),
                    [](Operation *u) { return isa<OptimizerStepOp>(u); })))
    return Phase::Optimizer;
  if (isa<MicrobatchesOp>(op))
    return Phase::Backward; // gradient accumulation
  if (isRecomputation(op))
    return Phase::Recompute;
  for (Operation *p = op; p; p = p->getParentOp()) {
    Operation *parent = p->getParentOp();
    if (auto serve = dyn_cast_or_null<ServeOp>(parent))
      return p->getParentRegion() == &serve.getPrefill() ? Phase::Prefill
                                                         : Phase::Decode;
    if (auto mb = dyn_cast_or_null<MicrobatchesOp>(parent))
      return p->getParentRegion() == &mb.getBackward() ? Phase::Backward
                                                       : Phase::Forward;
  }
  return Phase::Forward;
}

static thread_local SymbolicCache *activeCache = nullptr;

SymbolicCache::SymbolicCache() : previous(activeCache) { activeCache = this; }
SymbolicCache::~SymbolicCache() { activeCache = previous; }
SymbolicCache *SymbolicCache::active() { return activeCache; }

SymbolicCache::Evaluation::Evaluation(const sym::Bindings &b)
    : cache(activeCache) {
  if (!cache)
    return;
  previousBindings = cache->evaluating;
  previousNumber = cache->evaluation;
  cache->evaluating = &b;
  cache->evaluation = ++cache->evaluations;
}

SymbolicCache::Evaluation::~Evaluation() {
  if (!cache)
    return;
  cache->evaluating = previousBindings;
  cache->evaluation = previousNumber;
}

Cost mlir::stage::getOpCost(CostOpInterface op) {
  return memoizeSymbolic(&SymbolicCache::costs, op,
                         [&] { return op.getCost(); });
}

static PhaseCosts computePhaseCosts(Operation *root) {
  PhaseCosts pc;
  walkWithCounts(root, [&](Operation *op, const Multiplicity &n) {
    auto c = dyn_cast<CostOpInterface>(op);
    if (!c)
      return;
    Cost cost = n.of(getOpCost(c));
    Phase phase = getPhase(op);
    // The score matrix a flash-attention backward recomputes is part of
    // that kernel's cost, whatever the recomputation policy.
    if (phase == Phase::Backward)
      pc.attentionKernelRecomputeFlops += cost.recomputedFlops;
    pc.of(phase) += cost;
  });
  return pc;
}

PhaseCosts mlir::stage::getPhaseCosts(Operation *root) {
  return memoizeSymbolic(&SymbolicCache::phaseCosts, root,
                         [&] { return computePhaseCosts(root); });
}

static void walkBlock(Block &block, const Multiplicity &count,
                      function_ref<void(Operation *, const Multiplicity &)> fn) {
  for (Operation &op : block) {
    fn(&op, count);
    if (op.getNumRegions() == 0)
      continue;
    Multiplicity inner = count;
    if (auto rep = dyn_cast<RepeatOp>(op))
      inner = count.nested(rep.getCount().getValue(), rep.getStep().value_or(""));
    if (auto mb = dyn_cast<MicrobatchesOp>(op))
      inner = count.nested(mb.getCount().getValue());
    if (auto serve = dyn_cast<ServeOp>(op))
      inner = count.nested(serve.getMicrobatches().getValue());
    for (Region &r : op.getRegions())
      for (Block &b : r)
        walkBlock(b, inner, fn);
  }
}

void mlir::stage::walkWithCounts(
    Operation *root, function_ref<void(Operation *, const Multiplicity &)> fn) {
  for (Region &r : root->getRegions())
    for (Block &b : r)
      walkBlock(b, Multiplicity(), fn);
}

Cost mlir::stage::getTotalCost(Operation *root) {
  Cost total;
  walkWithCounts(root, [&](Operation *op, const Multiplicity &n) {
    if (auto c = dyn_cast<CostOpInterface>(op))
      total += n.of(getOpCost(c));
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
  case Phase::Prefill:
    return "prefill";
  case Phase::Decode:
    return "decode";
  }
  return "";
}
