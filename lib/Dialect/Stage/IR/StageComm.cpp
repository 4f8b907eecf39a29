//===- StageComm.cpp - The communication ops ------------------------------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::stage;

sym::Expr mlir::stage::getGroupSize(ArrayAttr axes) {
  sym::Expr n(1);
  for (Attribute a : axes)
    n *= sym::Expr::symbol(cast<StringAttr>(a).getValue().str());
  return n;
}

LogicalResult mlir::stage::verifyGridAxes(Operation *op,
                                          FlatSymbolRefAttr gridRef,
                                          ArrayAttr axes,
                                          SymbolTableCollection &symbols) {
  auto grid = symbols.lookupNearestSymbolFrom<GridOp>(op, gridRef);
  if (!grid)
    return op->emitOpError("'") << gridRef << "' does not name a stage.grid";
  if (axes.empty())
    return op->emitOpError("needs at least one axis");
  llvm::StringSet<> seen;
  for (Attribute a : axes) {
    StringRef name = cast<StringAttr>(a).getValue();
    if (!grid.hasAxis(name)) {
      std::string known;
      for (const std::string &n : grid.getAxisNames())
        known += (known.empty() ? "" : ", ") + n;
      return op->emitOpError("unknown axis '")
             << name << "' of grid " << gridRef << " (its axes: " << known
             << ")";
    }
    if (!seen.insert(name).second)
      return op->emitOpError("axis '") << name << "' is listed twice";
  }
  return success();
}

/// Checks that `out` is `in` with dimension `dim` scaled by `factor`
/// (`in[dim] * factor == out[dim]`), all other dimensions equal.
static LogicalResult verifyScaledDim(Operation *op, SymTensorType in,
                                     SymTensorType out, int64_t dim,
                                     const sym::Expr &inFactor,
                                     const sym::Expr &outFactor,
                                     StringRef what) {
  if (in.getRank() != out.getRank())
    return op->emitOpError("operand and result ranks differ");
  if (dim < 0 || dim >= int64_t(in.getRank()))
    return op->emitOpError(what) << " " << dim << " is out of range";
  if (in.getElementType() != out.getElementType())
    return op->emitOpError("operand and result element types differ");
  for (unsigned d = 0; d < in.getRank(); ++d) {
    if (int64_t(d) == dim) {
      if (in.getDim(d) * inFactor != out.getDim(d) * outFactor)
        return op->emitOpError("result dimension ")
               << d << " is " << out.getDim(d).str() << "; expected "
               << (in.getDim(d) * inFactor).divExact(outFactor).str();
    } else if (in.getDim(d) != out.getDim(d)) {
      return op->emitOpError("operand and result differ in dimension ") << d;
    }
  }
  return success();
}

LogicalResult AllGatherOp::verify() {
  auto self = cast<CollectiveOpInterface>(getOperation());
  return verifyScaledDim(*this, getInput().getType(), getResult().getType(),
                         getDim(), self.getGroupSize(), sym::Expr(1), "dim");
}

LogicalResult ReduceScatterOp::verify() {
  auto self = cast<CollectiveOpInterface>(getOperation());
  return verifyScaledDim(*this, getInput().getType(), getResult().getType(),
                         getDim(), sym::Expr(1), self.getGroupSize(), "dim");
}

LogicalResult LocalSplitOp::verify() {
  auto self = cast<CollectiveOpInterface>(getOperation());
  return verifyScaledDim(*this, getInput().getType(), getResult().getType(),
                         getDim(), sym::Expr(1), self.getGroupSize(), "dim");
}

LogicalResult AllToAllOp::verify() {
  auto self = cast<CollectiveOpInterface>(getOperation());
  SymTensorType in = getInput().getType(), out = getResult().getType();
  sym::Expr n = self.getGroupSize();
  int64_t split = getSplitDim(), concat = getConcatDim();
  if (in.getRank() != out.getRank())
    return emitOpError("operand and result ranks differ");
  if (in.getElementType() != out.getElementType())
    return emitOpError("operand and result element types differ");
  for (int64_t d : {split, concat})
    if (d < 0 || d >= int64_t(in.getRank()))
      return emitOpError("dimension ") << d << " is out of range";
  // `split` shrinks by the group size and `concat` grows by it.
  for (unsigned d = 0; d < in.getRank(); ++d) {
    sym::Expr scaledIn = in.getDim(d), scaledOut = out.getDim(d);
    if (int64_t(d) == split)
      scaledOut *= n;
    if (int64_t(d) == concat)
      scaledIn *= n;
    if (scaledIn != scaledOut)
      return emitOpError("result dimension ")
             << d << " is " << out.getDim(d).str() << "; expected "
             << scaledIn.divExact(int64_t(d) == split ? n : sym::Expr(1)).str();
  }
  return success();
}

static LogicalResult verifyPointToPoint(Operation *op, ArrayAttr axes,
                                        int64_t shift) {
  if (axes.size() != 1)
    return op->emitOpError("communicates along exactly one axis");
  // Two stages of a pipeline on one rank hand a value over in memory.
  if (shift == 0 && !op->getParentOfType<PipelineStageOp>())
    return op->emitOpError("shift 0 would send to itself (only two stages of "
                           "a pipeline on one rank hand a value over)");
  return success();
}

bool mlir::stage::isLocalHandoff(Operation *op) {
  if (auto send = dyn_cast<SendOp>(op))
    return send.getShift() == 0;
  if (auto recv = dyn_cast<RecvOp>(op))
    return recv.getShift() == 0;
  return false;
}

LogicalResult SendOp::verify() {
  return verifyPointToPoint(*this, getAxes(), getShift());
}
LogicalResult RecvOp::verify() {
  return verifyPointToPoint(*this, getAxes(), getShift());
}

sym::Expr AllReduceOp::getCommBytes() {
  return getInput().getType().getSizeInBytes();
}
sym::Expr AllGatherOp::getCommBytes() {
  return getInput().getType().getSizeInBytes();
}
sym::Expr ReduceScatterOp::getCommBytes() {
  return getInput().getType().getSizeInBytes();
}
sym::Expr AllToAllOp::getCommBytes() {
  return getInput().getType().getSizeInBytes();
}
sym::Expr LocalSplitOp::getCommBytes() { return sym::Expr(); }
sym::Expr SendOp::getCommBytes() {
  return getInput().getType().getSizeInBytes();
}
sym::Expr RecvOp::getCommBytes() {
  return getResult().getType().getSizeInBytes();
}
