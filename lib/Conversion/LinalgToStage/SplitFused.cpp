//===- SplitFused.cpp - Fused projections back into their parts -----------===//
//
// GPT-2's c_attn (like many exports of a fused QKV or gate/up projection)
// computes q, k and v with one weight [D, 3*H*Dh] and slices the result.
// Sharded as written, tensor parallelism would split the fused dimension in
// contiguous blocks, one rank's share all of q, and the slices would need
// the whole tensor back: an all-gather per layer. Here a value whose every
// use is one of the slices that partition it is computed part by part
// instead - a reshape, an elementwise op or an einsum in which the sliced
// index comes from one operand moves after the slices - until the slices
// reach the weight; a parameter partitioned so becomes one parameter per
// part (`attn.c_attn.weight.0`, `.1`, `.2`). Each part is then a projection
// of its own, as the presets write them, and the FLOPs do not change: every
// element is still computed once.
//
//===----------------------------------------------------------------------===//

#include "SplitFused.h"

#include "RewriteHelpers.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageBuilder.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

namespace {
/// The slices that are all the uses of a value, in order along `dim`, when
/// they partition that dimension exactly into equal parts.
struct Partition {
  int64_t dim;
  SmallVector<SliceOp> slices;
};
} // namespace

static std::optional<Partition> partitionOf(Value v) {
  if (v.use_empty())
    return std::nullopt;
  Partition p{-1, {}};
  for (Operation *user : v.getUsers()) {
    auto s = dyn_cast<SliceOp>(user);
    if (!s || hasPlanSharding(s) ||
        (p.dim >= 0 && s.getDim() != uint64_t(p.dim)))
      return std::nullopt;
    p.dim = s.getDim();
    p.slices.push_back(s);
  }
  auto constant = [](const Expr &e) -> std::optional<int64_t> {
    std::optional<sym::Rational> c = e.getConstant();
    return c ? c->toInt64() : std::nullopt;
  };
  std::optional<int64_t> extent =
      constant(GraphBuilder::typeOf(v).getDim(p.dim));
  if (!extent || p.slices.size() < 2)
    return std::nullopt;
  SmallVector<std::pair<int64_t, SliceOp>> byOffset;
  for (SliceOp s : p.slices) {
    std::optional<int64_t> offset = constant(s.getOffset().getValue());
    if (!offset)
      return std::nullopt;
    byOffset.push_back({*offset, s});
  }
  llvm::sort(byOffset, [](auto &a, auto &b) { return a.first < b.first; });
  int64_t part = *extent / int64_t(byOffset.size());
  for (auto [i, entry] : llvm::enumerate(byOffset)) {
    std::optional<int64_t> size = constant(entry.second.getSize().getValue());
    if (entry.first != int64_t(i) * part || size != part)
      return std::nullopt;
  }
  if (part * int64_t(byOffset.size()) != *extent)
    return std::nullopt;
  p.slices.clear();
  for (auto &entry : byOffset)
    p.slices.push_back(entry.second);
  return p;
}

/// Replaces each slice of `p` with `part(slice)` and erases `producer`.
static void replaceParts(Operation *producer, const Partition &p,
                         PatternRewriter &r,
                         function_ref<Value(SliceOp)> part) {
  for (SliceOp s : SmallVector<SliceOp>(p.slices))
    r.replaceOp(s, part(s));
  r.eraseOp(producer);
}

/// `x` sliced like `like`, along `dim`.
static Value sliceLike(GraphBuilder &g, Value x, int64_t dim, SliceOp like) {
  return g.slice(x, dim, like.getOffset().getValue(),
                 like.getSize().getValue());
}

/// A merging reshape's slices along a dimension it keeps: slices of its
/// input, each reshaped.
static bool splitReshape(ReshapeOp op, const Partition &p, GraphBuilder &g,
                         PatternRewriter &b) {
  SymTensorType rt = GraphBuilder::typeOf(op.getResult());
  std::optional<SmallVector<unsigned>> groups =
      mergeGroups(GraphBuilder::typeOf(op.getInput()).getDims(), rt.getDims());
  if (!groups || (*groups)[p.dim] != 1)
    return false;
  int64_t inDim = 0;
  for (int64_t d = 0; d < p.dim; ++d)
    inDim += (*groups)[d];
  replaceParts(op, p, b, [&](SliceOp s) {
    b.setInsertionPoint(s);
    SmallVector<Expr> dims = rt.getDims();
    dims[p.dim] = s.getSize().getValue();
    return g.reshape(sliceLike(g, op.getInput(), inDim, s), dims);
  });
  return true;
}

/// An elementwise op's slices: the op on the slices of its operands (an
/// operand broadcast over the sliced dimension is used whole).
static bool splitEwise(EwiseOp op, const Partition &p, GraphBuilder &g,
                       PatternRewriter &b) {
  SymTensorType rt = GraphBuilder::typeOf(op.getResult());
  int64_t rank = rt.getRank();
  SmallVector<int64_t> dims; // per operand: the dimension to slice, or -1
  for (Value in : op.getInputs()) {
    SymTensorType t = GraphBuilder::typeOf(in);
    int64_t d = p.dim - (rank - int64_t(t.getRank()));
    if (d < 0 || t.getDim(d) == Expr(1))
      dims.push_back(-1);
    else if (t.getDim(d) == rt.getDim(p.dim))
      dims.push_back(d);
    else
      return false;
  }
  replaceParts(op, p, b, [&](SliceOp s) {
    b.setInsertionPoint(s);
    SmallVector<Value> inputs;
    for (auto [in, d] : llvm::zip(op.getInputs(), dims))
      inputs.push_back(d < 0 ? in : sliceLike(g, in, d, s));
    return cloneOn(op, inputs, s.getResult().getType(), b);
  });
  return true;
}

/// An einsum's slices along an index that one operand alone carries: the
/// einsum on that operand's slices.
static bool splitEinsum(EinsumOp op, const Partition &p, GraphBuilder &g,
                        PatternRewriter &b) {
  SmallVector<std::string> terms = op.getInputIndices();
  char index = op.getResultIndices()[p.dim];
  int64_t carrier = -1, position = -1;
  for (auto [i, t] : llvm::enumerate(terms)) {
    size_t at = t.find(index);
    if (at == std::string::npos)
      continue;
    if (carrier >= 0)
      return false;
    carrier = i;
    position = at;
  }
  if (carrier < 0)
    return false;
  replaceParts(op, p, b, [&](SliceOp s) {
    b.setInsertionPoint(s);
    SmallVector<Value> inputs(op.getInputs());
    inputs[carrier] = sliceLike(g, inputs[carrier], position, s);
    return cloneOn(op, inputs, s.getResult().getType(), b);
  });
  return true;
}

/// A parameter's slices: one parameter per part, its dimension names
/// divided among them (`3*H*Dh` -> `H*Dh`).
static bool splitParam(ParamOp op, const Partition &p, PatternRewriter &b) {
  int64_t n = p.slices.size();
  ArrayAttr names = getDimNames(op);
  ArrayAttr partNames;
  if (names) {
    if (int64_t(names.size()) <= p.dim)
      return false;
    auto whole = dyn_cast<StringAttr>(names[p.dim]);
    if (!whole)
      return false;
    sym::Result<Expr> e = Expr::parse(whole.str());
    if (!e)
      return false;
    sym::Result<Expr> part = e->div(Expr(n));
    if (!part)
      return false;
    SmallVector<Attribute> parts(names.begin(), names.end());
    parts[p.dim] = b.getStringAttr(part->str());
    partNames = b.getArrayAttr(parts);
  }
  for (auto [i, slice] : llvm::enumerate(p.slices)) {
    SliceOp s = slice;
    b.setInsertionPoint(op);
    auto part =
        ParamOp::create(b, op.getLoc(), s.getResult().getType(),
                        b.getStringAttr((op.getName() + "." + Twine(i)).str()),
                        op.getKindAttr(), op.getGroupAttr());
    for (NamedAttribute a : op->getDiscardableAttrs())
      part->setAttr(a.getName(), a.getValue());
    if (partNames)
      setDimNames(part, partNames);
    b.replaceOp(s, part.getResult());
  }
  b.eraseOp(op);
  return true;
}

namespace {
/// A value whose every use is one of the slices that partition it, computed
/// part by part.
struct SplitPartitioned : RewritePattern {
  explicit SplitPartitioned(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &b) const override {
    if (op->getNumResults() != 1 || hasPlanSharding(op))
      return failure();
    std::optional<Partition> p = partitionOf(op->getResult(0));
    if (!p)
      return failure();
    GraphBuilder g(b, op->getLoc());
    b.setInsertionPoint(op);
    bool split = false;
    if (auto r = dyn_cast<ReshapeOp>(op))
      split = splitReshape(r, *p, g, b);
    else if (auto e = dyn_cast<EwiseOp>(op))
      split = splitEwise(e, *p, g, b);
    else if (auto e = dyn_cast<EinsumOp>(op))
      split = splitEinsum(e, *p, g, b);
    else if (auto q = dyn_cast<ParamOp>(op))
      split = splitParam(q, *p, b);
    return success(split);
  }
};
} // namespace

void mlir::stage::populateSplitFusedPatterns(RewritePatternSet &patterns) {
  patterns.add<SplitPartitioned>(patterns.getContext());
}
