//===- StageInference.cpp - Verifiers of the serving ops ------------------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"

using namespace mlir;
using namespace mlir::stage;

LogicalResult KVCacheOp::verify() {
  if (getName().empty())
    return emitOpError("needs a name");
  if (getResult().getType().getRank() < 2)
    return emitOpError("must have a layer and a position dimension, got ")
           << getResult().getType();
  if (ShardingAttr split = getSplitAttr()) {
    if (split.getRank() != getResult().getType().getRank())
      return emitOpError("split has ")
             << split.getRank() << " dimensions, the cache "
             << getResult().getType().getRank();
    if (!split.getPartialAxes().empty())
      return emitOpError("split cannot be a partial sum");
  }
  return success();
}

LogicalResult CacheWriteOp::verify() {
  SymTensorType in = getInput().getType(), out = getResult().getType();
  if (getDim() >= in.getRank())
    return emitOpError("dim ") << int64_t(getDim()) << " is out of range";
  SmallVector<sym::Expr> expected = in.getDims();
  expected[getDim()] = getWindow()
                           ? getWindow()->getValue()
                           : getOffset().getValue() + in.getDim(getDim());
  if (out.getDims() != expected || out.getElementType() != in.getElementType())
    return emitOpError("result must be the operand with dimension ")
           << int64_t(getDim()) << " of size " << expected[getDim()].str()
           << (getWindow() ? " (the window)" : " (offset + new positions)");
  if (getCache().empty())
    return emitOpError("needs the name of its cache");
  return success();
}

RepeatOp ServeOp::getDecodeLoop() {
  if (getDecode().empty())
    return {};
  for (Operation &op : getDecode().front())
    if (auto rep = dyn_cast<RepeatOp>(op))
      if (rep.getStep())
        return rep;
  return {};
}

sym::Expr ServeOp::getDecodeSteps() {
  RepeatOp loop = getDecodeLoop();
  return loop ? loop.getCount().getValue() : sym::Expr();
}

LogicalResult ServeOp::verifyRegions() {
  for (Region *r : {&getPrefill(), &getDecode()}) {
    if (r->empty())
      continue;
    if (!llvm::hasSingleElement(*r))
      return emitOpError("regions hold one block each");
    Block &b = r->front();
    if (b.getNumArguments() != 0)
      return emitOpError("regions take no arguments");
    auto yield =
        dyn_cast_or_null<YieldOp>(b.empty() ? nullptr : b.getTerminator());
    if (!yield || !yield.getValues().empty())
      return emitOpError("regions must end with a stage.yield of nothing");
  }
  if (getPrefill().empty() && getDecode().empty())
    return emitOpError("has neither a prefill nor a decode region");
  if (getHandoff() && !getPrefill().empty() && !getDecode().empty())
    return emitOpError("with handoff runs the prefill or the decode of a "
                       "disaggregated run, not both");
  if (!getDecode().empty()) {
    unsigned loops = 0;
    for (Operation &op : getDecode().front())
      if (auto rep = dyn_cast<RepeatOp>(op))
        loops += rep.getStep() ? 1 : 0;
    if (loops != 1)
      return emitOpError("decode region must hold one stage.repeat with a "
                         "step symbol (the decode steps), found ")
             << loops;
  }
  return success();
}
