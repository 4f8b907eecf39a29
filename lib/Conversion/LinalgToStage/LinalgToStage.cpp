//===- LinalgToStage.cpp - linalg on tensors to stage graphs --------------===//
//
// A function is rebuilt op by op in a new function on `!stage.tensor` types
// (constant dimensions until `stage-symbolize` names them). Every linalg
// structured op is read through its indexing maps, iterator types and
// payload (Payload.cpp): the same path serves matmul, batch_matmul,
// contract, generic, map, reduce, transpose, broadcast and elementwise.
//
//===----------------------------------------------------------------------===//

#include "LinalgToStage.h"

#include "GraphCleanup.h"
#include "Payload.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

namespace {

/// The plan the shard annotations give: grid axis index -> stage axis.
struct GridNames {
  SmallVector<std::string> axes;
};

class Converter {
public:
  Converter(func::FuncOp fn, const GridNames &grid)
      : fn(fn), b(fn.getContext()), g(b, fn.getLoc()), grid(grid) {}

  LogicalResult run();

private:
  FailureOr<SymTensorType> typeFor(Type t, Location loc);
  FailureOr<Value> get(Value v, Operation *user);
  LogicalResult convert(Operation *op);
  struct LinalgLoops;
  LogicalResult convertLinalg(linalg::LinalgOp op);
  FailureOr<LinalgLoops> analyzeLinalg(linalg::LinalgOp op);
  FailureOr<Value> convertContraction(const LinalgLoops &l);
  FailureOr<Value> convertReduction(const LinalgLoops &l);
  FailureOr<Value> convertParallel(const LinalgLoops &l);
  LogicalResult convertShard(shard::ShardOp op);
  /// `v` (indexed by the loop dims `dims`, some constant unit dims) brought
  /// to loop order `target` by dropping unit dims, transposing and
  /// broadcasting; `extents` are the loop extents.
  Value reshape(Value v, ArrayRef<Expr> dims);
  Value toLoops(Value v, ArrayRef<int64_t> dims, ArrayRef<int64_t> target,
                ArrayRef<Expr> extents);
  void map(Value from, Value to) { values[from] = to; }

  func::FuncOp fn, out;
  OpBuilder b;
  GraphBuilder g;
  const GridNames &grid;
  DenseMap<Value, Value> values;
  /// Tensors that only initialize outputs (tensor.empty, linalg.fill).
  DenseSet<Value> inits;
  int64_t constants = 0;
};

} // namespace

FailureOr<SymTensorType> Converter::typeFor(Type t, Location loc) {
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

Value Converter::reshape(Value v, ArrayRef<Expr> dims) {
  // A reshape of a reshape is one reshape of the original.
  if (auto inner = v.getDefiningOp<ReshapeOp>())
    v = inner.getInput();
  if (GraphBuilder::typeOf(v).getDims() == dims)
    return v;
  return g.reshape(v, dims);
}

FailureOr<Value> Converter::get(Value v, Operation *user) {
  if (inits.contains(v))
    return user->emitOpError("reads an initializer (tensor.empty or "
                             "linalg.fill) as data; only outputs may start "
                             "from one");
  auto it = values.find(v);
  if (it == values.end())
    return user->emitOpError("uses a value that was not converted");
  return it->second;
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

Value Converter::toLoops(Value v, ArrayRef<int64_t> dims,
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

/// What a linalg op computes, in its loops: the payload, each operand's
/// loop of each dimension (-1: a constant unit index), the loops' kinds and
/// extents, the converted inputs, the output's loops.
struct Converter::LinalgLoops {
  Operation *op;
  Payload payload;
  unsigned numInputs;
  SmallVector<SmallVector<int64_t>> dims;
  SmallVector<utils::IteratorType> iters;
  SmallVector<Expr> extents;
  SmallVector<Value> operands;
  SmallVector<int64_t> outDims, outLoops;
  Type elementType;
  SymTensorType resultType;

  bool reduces() const {
    return llvm::any_of(iters, [](utils::IteratorType t) {
      return t == utils::IteratorType::reduction;
    });
  }
};

FailureOr<Converter::LinalgLoops>
Converter::analyzeLinalg(linalg::LinalgOp op) {
  Operation *raw = op.getOperation();
  if (raw->getNumResults() != 1 || op.getNumDpsInits() != 1)
    return op->emitOpError("has ") << raw->getNumResults()
                                   << " results; stage converts linalg ops "
                                      "with one tensor result";
  if (!op.hasPureTensorSemantics())
    return op->emitOpError("works on buffers; stage converts linalg on tensors");
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
      FailureOr<Value> v = get(o.get(), raw);
      if (failed(v))
        return failure();
      l.operands.push_back(*v);
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

LogicalResult Converter::convertLinalg(linalg::LinalgOp op) {
  if (isa<linalg::FillOp>(op.getOperation())) {
    inits.insert(op->getResult(0));
    return success();
  }
  FailureOr<LinalgLoops> l = analyzeLinalg(op);
  if (failed(l))
    return failure();
  PayloadKind kind = l->payload.kind;
  FailureOr<Value> v = kind == PayloadKind::MulAdd ? convertContraction(*l)
                       : kind == PayloadKind::Sum || kind == PayloadKind::Max
                           ? convertReduction(*l)
                           : convertParallel(*l);
  if (failed(v))
    return failure();
  // Back to the output's layout: permuted loops, unit dims.
  Value r = *v;
  if (GraphBuilder::typeOf(r).getDims() != l->resultType.getDims())
    r = reshape(r, l->resultType.getDims());
  map(op->getResult(0), r);
  return success();
}

/// A multiply-accumulate of two inputs: an einsum.
FailureOr<Value> Converter::convertContraction(const LinalgLoops &l) {
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
FailureOr<Value> Converter::convertReduction(const LinalgLoops &l) {
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
FailureOr<Value> Converter::convertParallel(const LinalgLoops &l) {
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

LogicalResult Converter::convertShard(shard::ShardOp op) {
  FailureOr<Value> v = get(op.getSrc(), op);
  if (failed(v))
    return failure();
  map(op.getResult(), *v);
  auto sharding = op.getSharding().getDefiningOp<shard::ShardingOp>();
  if (!sharding)
    return op->emitOpError("needs its sharding from a shard.sharding op");
  if (!sharding.getStaticHaloSizes().empty() ||
      !sharding.getStaticShardedDimsOffsets().empty() ||
      !sharding.getDynamicHaloSizes().empty() ||
      !sharding.getDynamicShardedDimsOffsets().empty())
    return sharding->emitOpError(
        "has halos or uneven offsets, which stage does not model");
  if (grid.axes.empty())
    return op->emitOpError("annotates a sharding, but the grid's axes have "
                           "no stage names: pass grid-axes=dp,tp,...");
  SmallVector<SmallVector<std::string>> dims;
  for (shard::GridAxesAttr axes : sharding.getSplitAxes().getAxes()) {
    SmallVector<std::string> names;
    for (int16_t a : axes.asArrayRef()) {
      if (a < 0 || size_t(a) >= grid.axes.size())
        return sharding->emitOpError("splits over grid axis ")
               << a << ", which grid-axes does not name";
      names.push_back(grid.axes[a]);
    }
    dims.push_back(names);
  }
  unsigned rank = GraphBuilder::typeOf(*v).getRank();
  if (dims.size() > rank)
    return op->emitOpError("shards ") << dims.size()
                                      << " dimensions of a rank-" << rank
                                      << " tensor";
  dims.resize(rank);
  // The value keeps this sharding: on the op that defines it.
  Operation *def = v->getDefiningOp();
  if (!def)
    return op->emitOpError("annotates a value without a defining op");
  setPlanSharding(def, ShardingAttr::get(b.getContext(), dims, {}));
  return success();
}

/// One case per kind of op the frontends emit.
LogicalResult Converter::convert(Operation *op) {
  g.setLoc(op->getLoc());
  if (auto r = dyn_cast<func::ReturnOp>(op)) {
    SmallVector<Value> results;
    for (Value v : r.getOperands()) {
      FailureOr<Value> nv = get(v, op);
      if (failed(nv))
        return failure();
      results.push_back(*nv);
    }
    func::ReturnOp::create(b, op->getLoc(), results);
    return success();
  }
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    auto t = dyn_cast<RankedTensorType>(c.getType());
    if (!t) {
      // A scalar that fills initializers or that a payload captures (as
      // canonicalization hoists them) is read with those ops.
      if (llvm::all_of(op->getUsers(), [&](Operation *u) {
            return isa<linalg::FillOp>(u) || u->getParentOp() != fn;
          }))
        return success();
      return op->emitOpError("is a scalar used outside a payload");
    }
    FailureOr<SymTensorType> st = typeFor(t, op->getLoc());
    if (failed(st))
      return failure();
    std::string name = "const." + std::to_string(constants++);
    if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
      name = loc.getName().str();
    map(c.getResult(), g.param(name, st->getDims(), st->getElementType(), "",
                               ParamKind::buffer));
    return success();
  }
  if (isa<tensor::EmptyOp>(op)) {
    inits.insert(op->getResult(0));
    return success();
  }
  if (isa<shard::GridOp, shard::ShardingOp>(op))
    return success();
  if (auto s = dyn_cast<shard::ShardOp>(op))
    return convertShard(s);
  if (auto sm = dyn_cast<linalg::SoftmaxOp>(op)) {
    FailureOr<Value> in = get(sm.getInput(), op);
    if (failed(in))
      return failure();
    map(sm.getResult()[0], g.softmax(*in, sm.getDimension()));
    return success();
  }
  if (auto l = dyn_cast<linalg::LinalgOp>(op))
    return convertLinalg(l);
  auto reshapeTo = [&](Value src, Value res) -> LogicalResult {
    FailureOr<Value> in = get(src, op);
    FailureOr<SymTensorType> t = typeFor(res.getType(), op->getLoc());
    if (failed(in) || failed(t))
      return failure();
    map(res, reshape(*in, t->getDims()));
    return success();
  };
  if (auto e = dyn_cast<tensor::ExpandShapeOp>(op))
    return reshapeTo(e.getSrc(), e.getResult());
  if (auto c = dyn_cast<tensor::CollapseShapeOp>(op))
    return reshapeTo(c.getSrc(), c.getResult());
  if (auto s = dyn_cast<tensor::ExtractSliceOp>(op)) {
    FailureOr<Value> in = get(s.getSource(), op);
    if (failed(in))
      return failure();
    if (!s.hasUnitStride() || s.getSourceType().getRank() != s.getType().getRank() ||
        !s.getType().hasStaticShape() || !s.getStaticOffsets().size())
      return op->emitOpError("is not a static, unit-stride slice keeping the "
                             "rank; stage slices one dimension");
    ArrayRef<int64_t> offsets = s.getStaticOffsets(), sizes = s.getStaticSizes();
    auto shape = s.getSourceType().getShape();
    int64_t dim = -1;
    for (unsigned d = 0; d < shape.size(); ++d) {
      if (offsets[d] == ShapedType::kDynamic || sizes[d] == ShapedType::kDynamic)
        return op->emitOpError("has dynamic offsets or sizes");
      if (offsets[d] == 0 && sizes[d] == shape[d])
        continue;
      if (dim >= 0)
        return op->emitOpError("slices several dimensions; stage slices one");
      dim = d;
    }
    if (dim < 0) {
      map(s.getResult(), *in);
      return success();
    }
    map(s.getResult(), g.slice(*in, dim, Expr(offsets[dim]), Expr(sizes[dim])));
    return success();
  }
  if (auto c = dyn_cast<tensor::ConcatOp>(op)) {
    SmallVector<Value> ins;
    for (Value v : c.getInputs()) {
      FailureOr<Value> nv = get(v, op);
      if (failed(nv))
        return failure();
      ins.push_back(*nv);
    }
    map(c.getResult(), g.concat(ins, c.getDim()));
    return success();
  }
  return op->emitOpError("cannot be converted to stage (no rule for '")
         << op->getName() << "')";
}

LogicalResult Converter::run() {
  b.setInsertionPoint(fn);
  // The converted signature: tensors become stage tensors; arguments become
  // inputs or weights inside, so the new function takes none.
  SmallVector<Type> results;
  for (Type t : fn.getResultTypes()) {
    FailureOr<SymTensorType> st = typeFor(t, fn.getLoc());
    if (failed(st))
      return failure();
    results.push_back(*st);
  }
  out = func::FuncOp::create(b, fn.getLoc(), fn.getSymName(),
                             b.getFunctionType({}, results));
  b.setInsertionPointToStart(out.addEntryBlock());
  for (BlockArgument arg : fn.getArguments()) {
    FailureOr<SymTensorType> st = typeFor(arg.getType(), arg.getLoc());
    if (failed(st))
      return failure();
    g.setLoc(arg.getLoc());
    Value v;
    if (auto name = getArgWeightName(fn, arg.getArgNumber())) {
      auto group = getArgWeightGroup(fn, arg.getArgNumber());
      v = g.param(name.getValue(), st->getDims(), st->getElementType(),
                  group ? group.getValue() : "");
    } else {
      auto input = getArgInputName(fn, arg.getArgNumber());
      v = g.input(input ? input.getValue().str()
                        : "arg" + std::to_string(arg.getArgNumber()),
                  st->getDims(), st->getElementType());
    }
    if (ArrayAttr dims = getArgDimNames(fn, arg.getArgNumber()))
      setDimNames(v.getDefiningOp(), dims);
    map(arg, v);
  }
  for (Operation &op : fn.getBody().front())
    if (failed(convert(&op))) {
      out.erase();
      return failure();
    }
  cleanUpConvertedGraph(out);
  // Layout changes nothing reads (a unit dimension added and removed).
  for (Operation &op :
       llvm::make_early_inc_range(llvm::reverse(out.getBody().front())))
    if (isa<ReshapeOp, TransposeOp, BroadcastOp>(op) && op.use_empty())
      op.erase();
  out->setAttrs(fn->getDiscardableAttrDictionary());
  fn.erase();
  return success();
}

LogicalResult
mlir::stage::convertLinalgFunction(func::FuncOp fn,
                                   ArrayRef<std::string> gridAxes) {
  GridNames names{SmallVector<std::string>(gridAxes.begin(), gridAxes.end())};
  return Converter(fn, names).run();
}
