//===- BlockDifferentiator.cpp - The backward of a forward block ----------===//

#include "BlockDifferentiator.h"

using namespace mlir;
using namespace mlir::stage;

LogicalResult BlockDifferentiator::differentiate(Operation *op) {
  if (isa<ParamOp, InputOp, LossOp, SendOp>(op))
    return success(); // leaves, and seeds handled before the walk
  if (auto recv = dyn_cast<RecvOp>(op)) {
    if (Value g = adjoints.lookup(recv.getResult()))
      SendOp::create(opBuilder, recv.getLoc(), g, recv.getGridAttr(),
                     recv.getAxesAttr(), recv.getShiftAttr(),
                     opBuilder.getI64IntegerAttr(recv.getChannel() + 1));
    return success();
  }
  if (auto rep = dyn_cast<RepeatOp>(op))
    return differentiateRepeat(rep);
  bool anyGradient = llvm::any_of(
      op->getResults(), [&](Value r) { return bool(adjoints.lookup(r)); });
  if (!anyGradient)
    return success();
  auto rule = dyn_cast<AutodiffOpInterface>(op);
  if (!rule)
    return op->emitOpError("has no gradient rule");
  return rule.buildGradient(*this);
}

LogicalResult BlockDifferentiator::differentiateRepeat(RepeatOp rep) {
  unsigned nCarry = rep.getNumCarried();
  SmallVector<Value> carriedGrads;
  bool anyGradient = false;
  for (unsigned i = 0; i < nCarry; ++i) {
    Value g = adjoints.lookup(rep.getResult(i));
    anyGradient |= bool(g);
    carriedGrads.push_back(g);
  }
  if (!anyGradient)
    return success();
  for (auto [i, g] : llvm::enumerate(carriedGrads))
    if (!g)
      return rep.emitOpError("carried value ")
             << i << " has no gradient while another one has";

  // The reverse body: carried gradients first, then slices as asked for.
  // Owned here until the reverse repeat takes it (freed on an error).
  auto body = std::make_unique<Block>();
  for (Value g : carriedGrads)
    body->addArgument(g.getType(), rep.getLoc());
  RepeatDifferentiator inner(rep, *body, this, activity);
  auto yield = cast<YieldOp>(rep.getBodyBlock().getTerminator());
  for (unsigned i = 0; i < nCarry; ++i)
    inner.addGradient(yield.getValues()[i], body->getArgument(i));
  if (failed(inner.run())) {
    return failure();
  }

  SmallVector<Value> yields;
  for (BlockArgument arg : rep.getCarriedArgs()) {
    Value g = inner.getGradient(arg);
    if (!g) {
      return rep.emitOpError("a carried value's gradient does not reach the "
                             "start of the body");
    }
    yields.push_back(g);
  }
  SmallVector<unsigned> gradSlices;
  for (auto [j, arg] : llvm::enumerate(rep.getSliceArgs()))
    if (Value g = inner.getGradient(arg)) {
      yields.push_back(g);
      gradSlices.push_back(j);
    }
  OpBuilder yb(rep.getContext());
  yb.setInsertionPointToEnd(body.get());
  YieldOp::create(yb, rep.getLoc(), yields);

  // rebuild() replaces `rep`: nothing of it is read after this point.
  Location loc = rep.getLoc();
  RepeatOp forwardRep = inner.rebuild();
  SmallVector<Type> types;
  for (Value g : carriedGrads)
    types.push_back(g.getType());
  for (unsigned k = nCarry; k < yields.size(); ++k)
    types.push_back(cast<SymTensorType>(yields[k].getType())
                        .stacked(forwardRep.getCount().getValue()));
  auto reverse = RepeatOp::create(opBuilder, loc, types, forwardRep.getCount(),
                                  opBuilder.getUnitAttr(), StringAttr(), carriedGrads,
                                  inner.sliceOperands);
  reverse.getBody().push_back(body.release());

  for (unsigned i = 0; i < nCarry; ++i)
    if (needsGradient(forwardRep.getInits()[i]))
      addGradient(forwardRep.getInits()[i], reverse.getResult(i));
  for (auto [k, j] : llvm::enumerate(gradSlices))
    addGradient(forwardRep.getSlices()[j], reverse.getResult(nCarry + k));
  return success();
}
