//===- BlockDifferentiator.h - The backward of a forward block --*- C++ -*-===//
//
// Reverse-mode differentiation of symbolic graphs with regions. Each block
// of the forward is differentiated by a BlockDifferentiator that builds the
// matching backward block; what the backward asks of the forward decides
// what is kept:
//   - at the top level, kept values are yielded by the forward region and
//     become arguments of the backward region (MicrobatchDifferentiator);
//   - in a `stage.repeat` body, kept values become stacked results of the
//     forward repeat and slices of the reverse repeat of the backward
//     (RepeatDifferentiator).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TRANSFORMS_BLOCKDIFFERENTIATOR_H
#define STAGE_LIB_TRANSFORMS_BLOCKDIFFERENTIATOR_H

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageBuilder.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::stage {

/// Values that depend on a weight or on a received activation, computed over
/// a block and the bodies of its repeats.
class Activity {
public:
  explicit Activity(Block &block) { visitBlock(block); }
  bool isActive(Value v) const { return active.contains(v); }
  /// `fresh` replaces `old` (a rebuilt op's result).
  void replace(Value old, Value fresh) {
    if (active.erase(old))
      active.insert(fresh);
  }

private:
  void visitBlock(Block &block) {
    for (Operation &op : block)
      visitOp(op);
  }
  void visitOp(Operation &op) {
    if (auto p = dyn_cast<ParamOp>(op)) {
      if (p.getKind() == ParamKind::weight)
        active.insert(p.getResult());
      return;
    }
    if (isa<RecvOp>(op)) {
      active.insert(op.getResult(0));
      return;
    }
    if (auto rep = dyn_cast<RepeatOp>(op)) {
      visitRepeat(rep);
      return;
    }
    bool any = llvm::any_of(op.getOperands(),
                            [&](Value v) { return active.contains(v); });
    if (any)
      for (Value r : op.getResults())
        if (isDifferentiable(r))
          active.insert(r);
  }
  void visitRepeat(RepeatOp rep) {
    Block &body = rep.getBodyBlock();
    for (auto [slice, arg] : llvm::zip(rep.getSlices(), rep.getSliceArgs()))
      if (active.contains(slice))
        active.insert(arg);
    // A carried value is active if it enters active or becomes active in an
    // iteration: iterate to a fixed point.
    auto yield = cast<YieldOp>(body.getTerminator());
    visitBlock(body);
    while (true) {
      bool changed = false;
      for (auto [i, arg] : llvm::enumerate(rep.getCarriedArgs()))
        if (!active.contains(arg) && (active.contains(rep.getInits()[i]) ||
                                      active.contains(yield.getValues()[i]))) {
          active.insert(arg);
          changed = true;
        }
      if (!changed)
        break;
      visitBlock(body);
    }
    for (auto [i, r] : llvm::enumerate(rep.getResults()))
      if (active.contains(yield.getValues()[i]))
        active.insert(r);
  }
  static bool isDifferentiable(Value v) {
    auto t = dyn_cast<SymTensorType>(v.getType());
    return t && isa<FloatType>(t.getElementType());
  }

  llvm::DenseSet<Value> active;
};

/// Builds the backward of one forward block.
class BlockDifferentiator : public GradientEmitter {
public:
  BlockDifferentiator(Location loc, Block &forward, Block &backward,
                      BlockDifferentiator *parent, Activity &activity)
      : forward(forward), backward(backward), parent(parent),
        activity(activity), opBuilder(loc.getContext()), graph(opBuilder, loc) {
    opBuilder.setInsertionPointToEnd(&backward);
  }

  GraphBuilder &builder() override { return graph; }
  Value getGradient(Value r) override { return adjoints.lookup(r); }
  bool needsGradient(Value v) override { return activity.isActive(v); }

  void addGradient(Value v, Value grad) override {
    if (Value old = adjoints.lookup(v)) {
      Type et = cast<SymTensorType>(old.getType()).getElementType();
      grad = graph.ewise(EwiseKind::add, {old, graph.cast(grad, et)});
    }
    adjoints[v] = grad;
  }

  Value getForward(Value v) override {
    if (Value known = kept.lookup(v))
      return known;
    Operation *def = v.getDefiningOp();
    if (def && isDefinedHere(v) && isRecomputable(def) &&
        !keepsRecomputedResult(def))
      return recompute(def, v);
    Value b = keep(v);
    kept[v] = b;
    return b;
  }

  /// Differentiates the ops of the forward block in reverse order, after
  /// re-running the ops marked for recomputation in forward order (a layer's
  /// forward before its backward, as activation checkpointing does).
  LogicalResult run() {
    SmallVector<Operation *> ops;
    for (Operation &op : forward.without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops)
      if (isRecomputable(op) && op->getNumResults() &&
          !kept.count(op->getResult(0)))
        (void)recompute(op, op->getResult(0));
    for (Operation *op : llvm::reverse(ops)) {
      graph.setLoc(op->getLoc());
      if (failed(differentiate(op)))
        return failure();
    }
    return success();
  }

  /// Values defined in this forward block that the backward keeps, in the
  /// order they were first asked for.
  ArrayRef<Value> getKeptValues() const { return keptOrder; }

  /// Updates what this level and the enclosing ones know about `old`, a
  /// result of a forward op that was rebuilt as `fresh`.
  void replaceForwardValue(Value old, Value fresh) {
    for (BlockDifferentiator *d = this; d; d = d->parent) {
      for (Value &v : d->keptOrder)
        if (v == old)
          v = fresh;
      for (auto *map : {&d->kept, &d->adjoints})
        if (auto it = map->find(old); it != map->end()) {
          Value mapped = it->second;
          map->erase(it);
          (*map)[fresh] = mapped;
        }
    }
    activity.replace(old, fresh);
  }

protected:
  /// Makes `v` available in the backward block.
  virtual Value keep(Value v) = 0;

  bool isDefinedHere(Value v) const {
    Block *owner = isa<BlockArgument>(v) ? cast<BlockArgument>(v).getOwner()
                                         : v.getDefiningOp()->getBlock();
    return owner == &forward;
  }

  Block &forward, &backward;
  BlockDifferentiator *parent;
  Activity &activity;
  OpBuilder opBuilder;
  GraphBuilder graph;
  llvm::DenseMap<Value, Value> adjoints, kept;
  SmallVector<Value> keptOrder;

private:
  /// Re-runs a forward op the recompute policy marked, right before the
  /// first backward op that needs it; its operands are again kept or
  /// recomputed.
  Value recompute(Operation *def, Value v) {
    IRMapping map;
    for (Value operand : def->getOperands())
      map.map(operand, getForward(operand));
    Operation *clone = opBuilder.clone(*def, map);
    clearRecomputeMarks(clone);
    markRecomputation(clone);
    // A result that is stored anyway is re-run but not read back.
    if (keepsRecomputedResult(def))
      return clone->getResult(cast<OpResult>(v).getResultNumber());
    for (auto [o, c] : llvm::zip(def->getResults(), clone->getResults()))
      kept[o] = c;
    return kept.lookup(v);
  }

  LogicalResult differentiate(Operation *op);
  LogicalResult differentiateRepeat(RepeatOp rep);
};

/// The top level of a micro-batch: kept values cross from the forward to
/// the backward region.
class MicrobatchDifferentiator : public BlockDifferentiator {
public:
  using BlockDifferentiator::BlockDifferentiator;

protected:
  Value keep(Value v) override {
    if (!isDefinedHere(v))
      return v; // a weight, defined outside the micro-batch loop
    keptOrder.push_back(v);
    return backward.addArgument(v.getType(), v.getLoc());
  }
};

/// The body of a repeat: kept values are stacked over the iterations.
class RepeatDifferentiator : public BlockDifferentiator {
public:
  RepeatDifferentiator(RepeatOp rep, Block &backward,
                       BlockDifferentiator *parent, Activity &activity)
      : BlockDifferentiator(rep.getLoc(), rep.getBodyBlock(), backward, parent,
                            activity),
        rep(rep) {}

  /// Outer values to feed the reverse repeat as slices, one per slice
  /// argument added to the backward body, available after rebuild().
  SmallVector<Value> sliceOperands;

  /// Gives the forward repeat one stacked result per kept body value and
  /// returns the new repeat.
  RepeatOp rebuild() {
    if (keptOrder.empty()) {
      finishSlices(rep);
      return rep;
    }
    auto yield = cast<YieldOp>(forward.getTerminator());
    SmallVector<Value> values(yield.getValues());
    values.append(keptOrder.begin(), keptOrder.end());
    SmallVector<Type> types(rep.getResultTypes());
    for (Value v : keptOrder)
      types.push_back(
          cast<SymTensorType>(v.getType()).stacked(rep.getCount().getValue()));
    OpBuilder b(rep);
    auto fresh =
        RepeatOp::create(b, rep.getLoc(), types, rep.getCount(),
                         rep.getReverseAttr(), rep.getStepAttr(), rep.getInits(), rep.getSlices());
    fresh->setDiscardableAttrs(rep->getDiscardableAttrDictionary());
    fresh.getBody().takeBody(rep.getBody());
    OpBuilder yb(yield);
    YieldOp::create(yb, yield.getLoc(), values);
    yield.erase();
    for (auto [o, n] :
         llvm::zip(rep.getResults(),
                   fresh.getResults().take_front(rep.getNumResults()))) {
      o.replaceAllUsesWith(n);
      parent->replaceForwardValue(o, n);
    }
    rep.erase();
    rep = fresh;
    finishSlices(fresh);
    return fresh;
  }

protected:
  Value keep(Value v) override {
    if (!isDefinedHere(v))
      return parent->getForward(v); // captured from an enclosing level
    auto arg = dyn_cast<BlockArgument>(v);
    if (arg && arg.getArgNumber() >= rep.getNumCarried()) {
      // A weight slice: slice the same stack in the backward.
      Value stack = rep.getSlices()[arg.getArgNumber() - rep.getNumCarried()];
      pending.push_back({stack, -1});
      return backward.addArgument(v.getType(), v.getLoc());
    }
    pending.push_back({Value(), int(keptOrder.size())});
    keptOrder.push_back(v);
    return backward.addArgument(v.getType(), v.getLoc());
  }

private:
  /// Resolves the slice operands once the stacked results exist.
  void finishSlices(RepeatOp fresh) {
    unsigned base = fresh.getNumResults() - keptOrder.size();
    for (auto [stack, index] : pending)
      sliceOperands.push_back(parent->getForward(
          index < 0 ? stack : fresh.getResult(base + index)));
  }

  RepeatOp rep;
  SmallVector<std::pair<Value, int>> pending;
};

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_BLOCKDIFFERENTIATOR_H
