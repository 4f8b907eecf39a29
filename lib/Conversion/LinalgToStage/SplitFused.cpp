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
// element is still computed once. An interleaved layout (GPT-NeoX's view
// [B, S, H, 3*Dh], sliced along its last dimension) first moves the view
// before the projection, onto the weight.
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

/// For a reshape that only splits dimensions, how many dimensions of its
/// result each input dimension splits into (at least one each).
static std::optional<SmallVector<unsigned>> splitGroups(ReshapeOp op) {
  std::optional<SmallVector<unsigned>> groups =
      mergeGroups(GraphBuilder::typeOf(op.getResult()).getDims(),
                  GraphBuilder::typeOf(op.getInput()).getDims());
  if (!groups || llvm::is_contained(*groups, 0u))
    return std::nullopt;
  return groups;
}

/// `dims` with each dimension replaced by the `result` dimensions its group
/// splits into (units where `dims` broadcasts); `first` is the group of
/// `dims[0]` (a trailing-aligned operand starts later).
static SmallVector<Expr> splitDims(ArrayRef<Expr> dims, ArrayRef<Expr> result,
                                   ArrayRef<unsigned> groups, size_t first) {
  SmallVector<Expr> out;
  size_t at = 0;
  for (size_t i = 0; i < first; ++i)
    at += groups[i];
  for (auto [i, d] : llvm::enumerate(dims)) {
    unsigned n = groups[first + i];
    if (d == Expr(1) && result[at] != Expr(1))
      out.append(n, Expr(1)); // broadcast: unit in every part
    else
      out.append(result.begin() + at, result.begin() + at + n);
    at += n;
  }
  return out;
}

/// A splitting reshape of an einsum's result (GPT-NeoX's fused QKV viewed
/// as [B, S, H, 3*Dh]): the einsum on operands reshaped alike, each split
/// index becoming as many indices, so that the slices of the split
/// dimension reach the operand that carries it.
static bool sinkIntoEinsum(ReshapeOp op, EinsumOp producer,
                           ArrayRef<unsigned> groups, GraphBuilder &g,
                           PatternRewriter &b) {
  std::string result = producer.getResultIndices();
  SmallVector<std::string> terms = producer.getInputIndices();
  std::string used = result;
  for (const std::string &t : terms)
    used += t;
  std::string fresh;
  for (char first : {'a', 'A'})
    for (char c = first; c < first + 26; ++c)
      if (used.find(c) == std::string::npos)
        fresh.push_back(c);
  // Each result index, as the indices of its group in the new result.
  std::map<char, std::string> renamed;
  size_t next = 0;
  for (auto [i, c] : llvm::enumerate(result)) {
    if (groups[i] == 1) {
      renamed[c] = std::string(1, c);
      continue;
    }
    if (next + groups[i] > fresh.size())
      return false;
    renamed[c] = fresh.substr(next, groups[i]);
    next += groups[i];
  }
  SmallVector<Expr> out = GraphBuilder::typeOf(op.getResult()).getDims();
  std::map<char, SmallVector<Expr>> factors;
  size_t at = 0;
  for (auto [i, c] : llvm::enumerate(result)) {
    factors[c].assign(out.begin() + at, out.begin() + at + groups[i]);
    at += groups[i];
  }
  SmallVector<Value> inputs;
  std::string spec;
  for (auto [term, in] : llvm::zip(terms, producer.getInputs())) {
    SmallVector<Expr> dims;
    std::string newTerm;
    SmallVector<Expr> inDims = GraphBuilder::typeOf(in).getDims();
    for (auto [d, c] : llvm::zip(inDims, term)) {
      auto it = renamed.find(c);
      if (it == renamed.end() || it->second.size() == 1) {
        dims.push_back(d);
        newTerm += it == renamed.end() ? std::string(1, c) : it->second;
        continue;
      }
      dims.append(factors[c]);
      newTerm += it->second;
    }
    b.setInsertionPoint(op);
    inputs.push_back(dims == inDims ? in : g.reshape(in, dims));
    spec += (spec.empty() ? "" : ",") + newTerm;
  }
  std::string newResult;
  for (char c : result)
    newResult += renamed[c];
  spec += "->" + newResult;
  Value e = g.einsum(spec, inputs,
                     GraphBuilder::typeOf(op.getResult()).getElementType());
  for (NamedAttribute a : producer->getDiscardableAttrs())
    e.getDefiningOp()->setAttr(a.getName(), a.getValue());
  b.replaceOp(op, e);
  b.eraseOp(producer);
  return true;
}

/// A splitting reshape of an elementwise op's result: the op on its
/// operands reshaped alike (an operand broadcast over leading or unit
/// dimensions keeps them so).
static bool sinkIntoEwise(ReshapeOp op, EwiseOp producer,
                          ArrayRef<unsigned> groups, GraphBuilder &g,
                          PatternRewriter &b) {
  SymTensorType rt = GraphBuilder::typeOf(producer.getResult());
  SmallVector<Expr> out = GraphBuilder::typeOf(op.getResult()).getDims();
  for (Value in : producer.getInputs()) {
    SmallVector<Expr> dims = GraphBuilder::typeOf(in).getDims();
    size_t first = rt.getRank() - dims.size();
    for (auto [i, d] : llvm::enumerate(dims))
      if (d != rt.getDim(first + i) && d != Expr(1))
        return false;
  }
  SmallVector<Value> inputs;
  for (Value in : producer.getInputs()) {
    SmallVector<Expr> dims = GraphBuilder::typeOf(in).getDims();
    SmallVector<Expr> split =
        splitDims(dims, out, groups, rt.getRank() - dims.size());
    b.setInsertionPoint(op);
    inputs.push_back(split == dims ? in : g.reshape(in, split));
  }
  b.replaceOp(op, cloneOn(producer, inputs, op.getResult().getType(), b));
  b.eraseOp(producer);
  return true;
}

/// A parameter read only through a splitting reshape is declared in the
/// reshaped shape (a weight's layout is the model's choice). Its dimension
/// names do not name the split parts: they are dropped, and stage-symbolize
/// relates the parts to the activations' dimensions.
static bool reshapeParam(ReshapeOp op, ParamOp param, PatternRewriter &b) {
  b.setInsertionPoint(param);
  auto reshaped = ParamOp::create(b, param.getLoc(), op.getResult().getType(),
                                  param.getNameAttr(), param.getKindAttr(),
                                  param.getGroupAttr());
  for (NamedAttribute a : param->getDiscardableAttrs())
    if (a.getName() != getDimNamesAttrName())
      reshaped->setAttr(a.getName(), a.getValue());
  b.replaceOp(op, reshaped.getResult());
  b.eraseOp(param);
  return true;
}

/// A splitting reshape whose result the slices partition (along a
/// dimension it splits off, which no slice of its input can express):
/// moved before its producer (an einsum, an elementwise op or a parameter
/// used only here), where the slices can follow.
static bool sinkReshape(ReshapeOp op, GraphBuilder &g, PatternRewriter &b) {
  std::optional<SmallVector<unsigned>> groups = splitGroups(op);
  Operation *producer = op.getInput().getDefiningOp();
  if (!groups || !producer || !op.getInput().hasOneUse() ||
      hasPlanSharding(producer))
    return false;
  if (auto e = dyn_cast<EinsumOp>(producer))
    return sinkIntoEinsum(op, e, *groups, g, b);
  if (auto e = dyn_cast<EwiseOp>(producer))
    return sinkIntoEwise(op, e, *groups, g, b);
  if (auto p = dyn_cast<ParamOp>(producer))
    return reshapeParam(op, p, b);
  return false;
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
      split = splitReshape(r, *p, g, b) || sinkReshape(r, g, b);
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
