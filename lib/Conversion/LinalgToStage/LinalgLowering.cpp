//===- LinalgLowering.cpp - Stage ops for one frontend op -----------------===//

#include "LinalgLowering.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

FailureOr<SymTensorType> mlir::stage::typeFor(Type t, Location loc) {
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt)
    return emitError(loc) << "expected a ranked tensor, got " << t;
  if (!rt.hasStaticShape())
    return emitError(loc) << "dynamic dimensions are not supported (" << t
                          << "): export the model with static shapes";
  SmallVector<Expr> dims;
  for (int64_t d : rt.getShape())
    dims.push_back(Expr(d));
  return SymTensorType::get(t.getContext(), dims, rt.getElementType());
}

/// Whether `v` only initializes outputs (tensor.empty, linalg.fill).
static bool isInitializer(Value v) {
  return isa_and_nonnull<tensor::EmptyOp, linalg::FillOp>(v.getDefiningOp());
}

LogicalResult mlir::stage::checkData(Value v, Operation *user) {
  if (isInitializer(v))
    return user->emitOpError("reads an initializer (tensor.empty or "
                             "linalg.fill) as data; only outputs may start "
                             "from one");
  return success();
}

/// Loop dims of a map result: the dim position, or -1 for a constant 0.
static FailureOr<SmallVector<int64_t>> loopDims(AffineMap m, Operation *op) {
  SmallVector<int64_t> dims;
  for (AffineExpr e : m.getResults()) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      dims.push_back(d.getPosition());
    else if (auto c = dyn_cast<AffineConstantExpr>(e); c && c.getValue() == 0)
      dims.push_back(-1);
    else
      return op->emitOpError("has an indexing map that is not a projected "
                             "permutation of its loops: ")
             << AffineMapAttr::get(m);
  }
  return dims;
}

Value StageLowering::reshape(Value v, ArrayRef<Expr> dims) {
  if (auto inner = v.getDefiningOp<ReshapeOp>())
    v = inner.getInput();
  if (GraphBuilder::typeOf(v).getDims() == dims)
    return v;
  return g.reshape(v, dims);
}

Value StageLowering::toLoops(Value v, ArrayRef<int64_t> dims,
                             ArrayRef<int64_t> target, ArrayRef<Expr> extents) {
  SymTensorType t = GraphBuilder::typeOf(v);
  // Unit dims addressed by a constant: reshape them away.
  SmallVector<int64_t> kept;
  SmallVector<Expr> keptDims;
  for (auto [i, d] : llvm::enumerate(dims))
    if (d >= 0) {
      kept.push_back(d);
      keptDims.push_back(t.getDim(i));
    }
  if (kept.size() != dims.size())
    v = reshape(v, keptDims);
  // Order the remaining dims as in `target`.
  SmallVector<int64_t> order;
  for (int64_t d : target)
    if (llvm::is_contained(kept, d))
      order.push_back(d);
  if (order != kept) {
    SmallVector<int64_t> perm;
    for (int64_t d : order)
      perm.push_back(llvm::find(kept, d) - kept.begin());
    v = g.transpose(v, perm);
  }
  // Broadcast the missing ones, unless they are leading (ewise broadcasts
  // trailing operands itself).
  SmallVector<int64_t> missing;
  for (auto [i, d] : llvm::enumerate(target))
    if (!llvm::is_contained(order, d))
      missing.push_back(int64_t(i));
  bool leadingOnly = llvm::all_of(llvm::enumerate(missing), [](auto p) {
    return int64_t(p.index()) == p.value();
  });
  if (!missing.empty() && !leadingOnly) {
    SmallVector<Expr> full;
    for (int64_t d : target)
      full.push_back(extents[d]);
    v = g.broadcast(v, missing, full);
  }
  return v;
}

FailureOr<LinalgLoops> StageLowering::analyzeLinalg(linalg::LinalgOp op,
                                                    ValueRange inputs) {
  Operation *raw = op.getOperation();
  if (raw->getNumResults() != 1 || op.getNumDpsInits() != 1)
    return op->emitOpError("has ") << raw->getNumResults()
                                   << " results; stage converts linalg ops "
                                      "with one tensor result";
  if (!op.hasPureTensorSemantics())
    return op->emitOpError(
        "works on buffers; stage converts linalg on tensors");
  LinalgLoops l;
  l.op = raw;
  l.iters = op.getIteratorTypesArray();
  l.numInputs = op.getNumDpsInputs();
  l.payload = classifyPayload(*op.getBlock(), l.numInputs);
  if (l.payload.kind == PayloadKind::Unknown)
    return op->emitOpError("cannot be converted to stage: ") << l.payload.why;
  for (AffineMap m : op.getIndexingMapsArray()) {
    FailureOr<SmallVector<int64_t>> d = loopDims(m, raw);
    if (failed(d))
      return failure();
    l.dims.push_back(*d);
  }
  // Loop extents, from the operands that index each loop.
  l.extents.assign(l.iters.size(), Expr(0));
  for (OpOperand &o : raw->getOpOperands()) {
    unsigned i = o.getOperandNumber();
    auto shape = cast<RankedTensorType>(o.get().getType()).getShape();
    for (auto [k, d] : llvm::enumerate(l.dims[i]))
      if (d >= 0)
        l.extents[d] = Expr(shape[k]);
    if (i < l.numInputs) {
      if (failed(checkData(o.get(), raw)))
        return failure();
      l.operands.push_back(inputs[i]);
    }
  }
  l.outDims = l.dims.back();
  for (int64_t d : l.outDims)
    if (d >= 0)
      l.outLoops.push_back(d);
  l.elementType =
      cast<RankedTensorType>(raw->getResult(0).getType()).getElementType();
  FailureOr<SymTensorType> resultType =
      typeFor(raw->getResult(0).getType(), raw->getLoc());
  if (failed(resultType))
    return failure();
  l.resultType = *resultType;
  return l;
}

/// A multiply-accumulate of two inputs: an einsum.
FailureOr<Value> StageLowering::convertContraction(const LinalgLoops &l) {
  if (l.numInputs != 2)
    return l.op->emitOpError("multiplies ")
           << l.numInputs << " inputs; stage contracts two";
  auto letters = [&](ArrayRef<int64_t> ds) {
    std::string s;
    for (int64_t d : ds)
      if (d >= 0)
        s += char('a' + d);
    return s;
  };
  SmallVector<Value> ins;
  for (unsigned i = 0; i < 2; ++i) {
    Value v = l.operands[i];
    SmallVector<int64_t> kept;
    for (int64_t d : l.dims[i])
      if (d >= 0)
        kept.push_back(d);
    if (kept.size() != l.dims[i].size())
      v = toLoops(v, l.dims[i], kept, l.extents);
    ins.push_back(v);
  }
  std::string spec =
      letters(l.dims[0]) + "," + letters(l.dims[1]) + "->" + letters(l.outDims);
  return g.einsum(spec, ins, l.elementType);
}

/// A sum or maximum over some loops: a reduce, in the output's loop order.
FailureOr<Value> StageLowering::convertReduction(const LinalgLoops &l) {
  if (l.numInputs != 1 || !l.reduces())
    return l.op->emitOpError("accumulates without reducing a loop");
  SmallVector<int64_t> all;
  for (int64_t d : l.dims[0])
    if (d >= 0)
      all.push_back(d);
  llvm::sort(all);
  Value in = toLoops(l.operands[0], l.dims[0], all, l.extents);
  SmallVector<int64_t> reduced;
  for (auto [i, d] : llvm::enumerate(all))
    if (l.iters[d] == utils::IteratorType::reduction)
      reduced.push_back(int64_t(i));
  Value r = g.reduce(l.payload.kind == PayloadKind::Sum ? ReduceKind::sum
                                                        : ReduceKind::max,
                     in, reduced);
  // The reduced value in the output's loop order.
  SmallVector<int64_t> keptLoops;
  for (int64_t d : all)
    if (l.iters[d] != utils::IteratorType::reduction)
      keptLoops.push_back(d);
  if (keptLoops != l.outLoops)
    r = toLoops(r, keptLoops, l.outLoops, l.extents);
  return r;
}

/// Parallel loops: a copy (transpose, broadcast) or an elementwise op.
FailureOr<Value> StageLowering::convertParallel(const LinalgLoops &l) {
  if (l.reduces())
    return l.op->emitOpError("reduces with a payload that is no sum, max or "
                             "multiply-accumulate");
  // Parallel: copy (transpose, broadcast) or elementwise.
  SmallVector<Value> ins;
  for (unsigned i = 0; i < l.numInputs; ++i) {
    if (l.payload.kind == PayloadKind::Copy && i != l.payload.copied)
      continue;
    // Unit dimensions of an elementwise operand drop when what remains
    // broadcasts as a trailing suffix (a bias [1, 1, F] on [1, T, F]).
    SmallVector<int64_t> di = l.dims[i];
    bool broadcasts = llvm::any_of(l.outLoops, [&](int64_t d) {
      return l.extents[d] != Expr(1) && !llvm::is_contained(di, d);
    });
    if (l.payload.kind == PayloadKind::Elementwise && broadcasts) {
      SmallVector<int64_t> trimmed = di;
      for (int64_t &d : trimmed)
        if (d >= 0 && l.extents[d] == Expr(1))
          d = -1;
      unsigned n = llvm::count_if(trimmed, [](int64_t d) { return d >= 0; });
      ArrayRef<int64_t> suffix = ArrayRef<int64_t>(l.outLoops).take_back(n);
      if (llvm::all_of(trimmed, [&](int64_t d) {
            return d < 0 || llvm::is_contained(suffix, d);
          }))
        di = trimmed;
    }
    ins.push_back(toLoops(l.operands[i], di, l.outLoops, l.extents));
  }
  Value r;
  if (l.payload.kind == PayloadKind::Copy) {
    r = ins.front();
    if (GraphBuilder::typeOf(r).getRank() < l.outLoops.size()) {
      SmallVector<int64_t> missing;
      SmallVector<Expr> full;
      unsigned lead = l.outLoops.size() - GraphBuilder::typeOf(r).getRank();
      for (unsigned k = 0; k < lead; ++k)
        missing.push_back(k);
      for (int64_t d : l.outLoops)
        full.push_back(l.extents[d]);
      r = g.broadcast(r, missing, full);
    }
  } else {
    // The widest operand sets the shape; pad a scalar-only op to it.
    bool full = llvm::any_of(ins, [&](Value v) {
      return GraphBuilder::typeOf(v).getRank() == l.outLoops.size();
    });
    if (!full) {
      SmallVector<Expr> shape;
      for (int64_t d : l.outLoops)
        shape.push_back(l.extents[d]);
      SmallVector<int64_t> missing;
      unsigned lead =
          l.outLoops.size() - GraphBuilder::typeOf(ins[0]).getRank();
      for (unsigned k = 0; k < lead; ++k)
        missing.push_back(k);
      ins[0] = g.broadcast(ins[0], missing, shape);
    }
    if (l.payload.ewise == EwiseKind::generic) {
      SymTensorType widest = GraphBuilder::typeOf(ins[0]);
      for (Value v : ins)
        if (GraphBuilder::typeOf(v).getRank() > widest.getRank())
          widest = GraphBuilder::typeOf(v);
      OpBuilder &b = g.builder();
      r = EwiseOp::create(
          b, l.op->getLoc(), widest.withElementType(l.elementType),
          EwiseKind::generic, ins,
          b.getI64IntegerAttr(std::max<int64_t>(l.payload.flops, 1)));
    } else {
      SmallVector<Value> ordered;
      for (unsigned a : l.payload.order)
        ordered.push_back(ins[a]);
      r = g.ewise(l.payload.ewise, l.payload.order.empty() ? ins : ordered,
                  l.elementType);
    }
  }
  return r;
}
