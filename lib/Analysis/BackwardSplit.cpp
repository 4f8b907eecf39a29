//===- BackwardSplit.cpp - Input and weight gradients of a backward -------===//

#include "Stage/Analysis/BackwardSplit.h"

using namespace mlir;
using namespace mlir::stage;

/// The argument of `rep`'s body that operand `use` (an init or a slice)
/// becomes.
static std::optional<BlockArgument> bodyArgumentOf(RepeatOp rep,
                                                   OpOperand &use) {
  unsigned n = use.getOperandNumber();
  unsigned inits = rep.getInits().getBeginOperandIndex();
  unsigned slices = rep.getSlices().getBeginOperandIndex();
  if (n >= inits && n < inits + rep.getNumCarried())
    return rep.getBodyBlock().getArgument(n - inits);
  if (n >= slices && n < slices + rep.getSlices().size())
    return rep.getSliceArgs()[n - slices];
  return std::nullopt;
}

namespace {
/// Classifies one block (the backward block, or a repeat's body within it)
/// from its last op to its first, so that every use is classified first.
class Classifier {
public:
  Classifier(DenseSet<Operation *> &weight, DenseSet<Operation *> &mixed)
      : weight(weight), mixed(mixed) {}

  void classify(Block &block, ArrayRef<bool> yieldIsWeight) {
    Operation *term = block.getTerminator();
    for (auto [i, w] : llvm::enumerate(yieldIsWeight))
      if (w)
        sinks.insert(&term->getOpOperand(unsigned(i)));
    for (Operation &op : llvm::reverse(block)) {
      if (&op == term)
        continue;
      if (auto rep = dyn_cast<RepeatOp>(op)) {
        classifyRepeat(rep);
        continue;
      }
      if (op.getNumResults() && op.getNumRegions() == 0 &&
          llvm::all_of(op.getResults(), [&](Value r) { return onlyWeight(r); }))
        weight.insert(&op);
    }
  }

private:
  /// Every use of `v` is by a weight-gradient op or a weight gradient's
  /// output (and there is one).
  bool onlyWeight(Value v) {
    if (v.use_empty())
      return false;
    for (OpOperand &use : v.getUses()) {
      if (sinks.contains(&use))
        continue;
      Operation *user = use.getOwner();
      if (auto rep = dyn_cast<RepeatOp>(user)) {
        // An init or a slice: what the body does with its argument.
        if (weight.contains(rep))
          continue;
        std::optional<BlockArgument> arg = bodyArgumentOf(rep, use);
        if (arg && onlyWeight(*arg))
          continue;
        return false;
      }
      if (!weight.contains(user))
        return false;
    }
    return true;
  }

  void classifyRepeat(RepeatOp rep) {
    // A carried value feeds the next layer's input gradient; a layer's
    // stacked result is a weight gradient when only weight gradients use it.
    SmallVector<bool> yields(rep.getNumCarried(), false);
    for (unsigned r = rep.getNumCarried(); r < rep.getNumResults(); ++r)
      yields.push_back(onlyWeight(rep.getResult(r)));
    Block &body = rep.getBodyBlock();
    classify(body, yields);
    bool any = false, all = true;
    for (Operation &op : body.without_terminator()) {
      bool w = weight.contains(&op);
      any |= w;
      all &= w;
    }
    if (all && any)
      weight.insert(rep);
    else if (any)
      mixed.insert(rep);
  }

  DenseSet<Operation *> &weight, &mixed;
  DenseSet<OpOperand *> sinks;
};
} // namespace

BackwardSplit::BackwardSplit(MicrobatchesOp loop) {
  if (!loop)
    return;
  Block &backward = loop.getBackwardBlock();
  SmallVector<bool> yields(backward.getTerminator()->getNumOperands(), true);
  Classifier(weight, mixed).classify(backward, yields);
}

bool BackwardSplit::runsIn(Operation *op, bool weightStep) const {
  if (weightStep)
    return weight.contains(op) || mixed.contains(op);
  return !weight.contains(op);
}

bool BackwardSplit::isWeightStepValue(Value v) const {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (auto rep = dyn_cast<RepeatOp>(def)) {
    unsigned r = cast<OpResult>(v).getResultNumber();
    if (r < rep.getNumCarried())
      return false;
    return isWeightStepValue(rep.getBodyBlock().getTerminator()->getOperand(r));
  }
  return weight.contains(def);
}

bool BackwardSplit::readsInWeightStep(Value v) const {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (weight.contains(user))
      return true;
    auto rep = dyn_cast<RepeatOp>(user);
    if (!rep || !mixed.contains(rep))
      continue;
    std::optional<BlockArgument> arg = bodyArgumentOf(rep, use);
    if (arg && readsInWeightStep(*arg))
      return true;
  }
  return false;
}
