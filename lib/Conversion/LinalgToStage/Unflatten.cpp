//===- Unflatten.cpp - Undo the frontends' flattening of row dimensions ---===//
//
// torch-mlir and StableHLO lower a linear layer on [B, S, D] to a matmul on
// [B*S, D] between a collapse and an expand. Sharded as written, the merged
// rows could only be split like a batch, so the sequence split of Megatron's
// sequence parallelism would be undone and redone around every layer. Here
// the collapse moves past the ops that treat the merged rows as independent
// (elementwise ops whose other operands broadcast over trailing dimensions,
// einsums whose merged index is free), and reshape pairs fold, so the graph
// keeps the model's own dimensions.
//
//===----------------------------------------------------------------------===//

#include "Unflatten.h"

#include "RewriteHelpers.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageBuilder.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

namespace {
/// A reshape that merges dimensions: its source and the group sizes.
struct Merge {
  Value source;
  SmallVector<unsigned> groups;
  bool merges() const {
    return llvm::any_of(groups, [](unsigned n) { return n != 1; });
  }
};
} // namespace

static std::optional<Merge> mergeOf(Value v) {
  auto r = v.getDefiningOp<ReshapeOp>();
  if (!r || hasPlanSharding(r))
    return std::nullopt;
  std::optional<SmallVector<unsigned>> groups =
      mergeGroups(GraphBuilder::typeOf(r.getInput()).getDims(),
                  GraphBuilder::typeOf(v).getDims());
  if (!groups)
    return std::nullopt;
  Merge m{r.getInput(), *groups};
  if (!m.merges())
    return std::nullopt;
  return m;
}

/// `ewise(merge(x), bias)` -> `merge(ewise(x, bias))` where every other
/// operand is a scalar, a merge of the same shape, or broadcasts over
/// trailing dimensions that are not merged.
static bool sinkThroughEwise(EwiseOp op, PatternRewriter &r) {
  GraphBuilder g(r, op.getLoc());
  SymTensorType rt = GraphBuilder::typeOf(op.getResult());
  std::optional<Merge> lead;
  for (Value in : op.getInputs())
    if (GraphBuilder::typeOf(in).getRank() == rt.getRank())
      if ((lead = mergeOf(in)))
        break;
  if (!lead)
    return false;
  SymTensorType st = GraphBuilder::typeOf(lead->source);
  unsigned unmergedTail = 0;
  // Trailing dimensions the reshape keeps one to one (not merged, not a
  // unit it adds): a broadcast operand may cover only those.
  for (unsigned n : llvm::reverse(lead->groups)) {
    if (n != 1)
      break;
    ++unmergedTail;
  }
  SmallVector<Value> inputs;
  for (Value in : op.getInputs()) {
    unsigned rank = GraphBuilder::typeOf(in).getRank();
    if (rank == rt.getRank()) {
      std::optional<Merge> m = mergeOf(in);
      if (!m || GraphBuilder::typeOf(m->source).getDims() != st.getDims())
        return false;
      inputs.push_back(m->source);
    } else if (rank <= unmergedTail) {
      inputs.push_back(in);
    } else {
      return false;
    }
  }
  r.setInsertionPoint(op);
  Value moved = cloneOn(
      op, inputs,
      SymTensorType::get(op.getContext(), st.getDims(), rt.getElementType()),
      r);
  g.setLoc(op.getLoc());
  r.replaceOp(op, g.reshape(moved, rt.getDims()));
  return true;
}

/// An einsum like `like` (its element type and attributes) on `inputs`
/// with new index terms.
static Value rebuildEinsum(EinsumOp like, ArrayRef<std::string> terms,
                           StringRef result, ValueRange inputs,
                           GraphBuilder &g) {
  Value e = g.einsum(llvm::join(terms, ",") + "->" + result.str(), inputs,
                     GraphBuilder::typeOf(like.getResult()).getElementType());
  for (NamedAttribute a : like->getDiscardableAttrs())
    e.getDefiningOp()->setAttr(a.getName(), a.getValue());
  return e;
}

/// `einsum(merge(x), w)` -> `merge(einsum(x, w))` for every merged index that
/// only this operand and the result carry (the rows of a linear layer).
static bool absorbIntoEinsum(EinsumOp op, PatternRewriter &r) {
  GraphBuilder g(r, op.getLoc());
  SmallVector<std::string> terms = op.getInputIndices();
  std::string result = op.getResultIndices();
  std::string used;
  for (const std::string &t : terms)
    used += t;
  auto fresh = [&]() {
    for (char c : llvm::StringRef(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"))
      if (used.find(c) == std::string::npos) {
        used += c;
        return c;
      }
    return '\0';
  };
  for (auto [n, in] : llvm::enumerate(op.getInputs())) {
    std::optional<Merge> m = mergeOf(in);
    if (!m)
      continue;
    SmallVector<Expr> from(GraphBuilder::typeOf(m->source).getDims());
    std::string term, newResult = result;
    SmallVector<Expr> partial;
    bool absorbed = false;
    unsigned i = 0;
    for (auto [d, size] : llvm::enumerate(m->groups)) {
      char c = terms[n][d];
      auto count = [&](const std::string &s) { return llvm::count(s, c); };
      unsigned elsewhere = 0;
      for (auto [k, t] : llvm::enumerate(terms))
        elsewhere += k == n ? count(t) - 1 : count(t);
      // Only a merge of two real dimensions is worth splitting the index
      // (unit dimensions are dropUnitIndices' business).
      unsigned real =
          llvm::count_if(ArrayRef<Expr>(from).slice(i, size),
                         [](const Expr &e) { return e != Expr(1); });
      bool free = real > 1 && elsewhere == 0 && count(result) == 1;
      if (!free) {
        term += c;
        Expr merged(1);
        for (unsigned k = 0; k < size; ++k)
          merged *= from[i + k];
        partial.push_back(merged);
        i += size;
        continue;
      }
      std::string letters;
      for (unsigned k = 0; k < size; ++k) {
        char f = fresh();
        if (!f)
          return false;
        letters += f;
        partial.push_back(from[i++]);
      }
      term += letters;
      newResult.replace(newResult.find(c), 1, letters);
      absorbed = true;
    }
    if (!absorbed)
      continue;
    g.setLoc(op.getLoc());
    r.setInsertionPoint(op);
    SmallVector<Value> inputs(op.getInputs());
    inputs[n] = partial == from ? m->source : g.reshape(m->source, partial);
    terms[n] = term;
    SymTensorType rt = GraphBuilder::typeOf(op.getResult());
    Value e = rebuildEinsum(op, terms, newResult, inputs, g);
    r.replaceOp(op, g.reshape(e, rt.getDims()));
    return true;
  }
  return false;
}

/// `einsum(transpose(x))` -> `einsum(x)` with the operand's term permuted:
/// the layout change is the contraction's indexing (as torch's views are).
static bool foldTransposeIntoEinsum(EinsumOp op, PatternRewriter &r) {
  GraphBuilder g(r, op.getLoc());
  SmallVector<std::string> terms = op.getInputIndices();
  SmallVector<Value> inputs(op.getInputs());
  bool folded = false;
  for (auto [term, in] : llvm::zip(terms, inputs)) {
    auto t = in.getDefiningOp<TransposeOp>();
    if (!t || hasPlanSharding(t))
      continue;
    std::string permuted(term.size(), ' ');
    for (auto [k, from] : llvm::enumerate(t.getPermutation()))
      permuted[from] = term[k];
    term = permuted;
    in = t.getInput();
    folded = true;
  }
  if (!folded)
    return false;
  g.setLoc(op.getLoc());
  r.setInsertionPoint(op);
  Value e = rebuildEinsum(op, terms, op.getResultIndices(), inputs, g);
  r.replaceOp(op, e);
  return true;
}

/// `transpose(einsum)` -> `einsum` with its result term permuted, when the
/// transpose is the einsum's only reader.
static bool foldEinsumIntoTranspose(TransposeOp op, PatternRewriter &r) {
  GraphBuilder g(r, op.getLoc());
  auto e = op.getInput().getDefiningOp<EinsumOp>();
  if (!e || !e->hasOneUse() || hasPlanSharding(e) || hasPlanSharding(op))
    return false;
  std::string from = e.getResultIndices(), result;
  for (int64_t k : op.getPermutation())
    result += from[k];
  g.setLoc(e.getLoc());
  r.setInsertionPoint(op);
  Value n = rebuildEinsum(e, e.getInputIndices(), result, e.getInputs(), g);
  r.replaceOp(op, n);
  r.eraseOp(e);
  return true;
}

/// An index of extent 1 (the batch of a batch_matmul on one flattened
/// batch) is dropped from every operand and the result.
static bool dropUnitIndices(EinsumOp op, PatternRewriter &r) {
  GraphBuilder g(r, op.getLoc());
  SmallVector<std::string> terms = op.getInputIndices();
  std::string result = op.getResultIndices();
  std::string units;
  for (auto [term, in] : llvm::zip(terms, op.getInputs()))
    for (auto [c, d] : llvm::zip(term, GraphBuilder::typeOf(in).getDims()))
      if (d == Expr(1) && units.find(c) == std::string::npos)
        units += c;
  auto isUnit = [&](char c) { return units.find(c) != std::string::npos; };
  if (units.empty() || llvm::any_of(terms, [&](const std::string &t) {
        return llvm::all_of(t, isUnit);
      }))
    return false;
  g.setLoc(op.getLoc());
  r.setInsertionPoint(op);
  auto drop = [&](Value v, std::string &term) {
    SmallVector<Expr> dims;
    std::string kept;
    for (auto [c, d] : llvm::zip(term, GraphBuilder::typeOf(v).getDims()))
      if (!isUnit(c)) {
        kept += c;
        dims.push_back(d);
      }
    term = kept;
    return dims.size() == GraphBuilder::typeOf(v).getRank()
               ? v
               : g.reshape(v, dims);
  };
  SmallVector<Value> inputs;
  for (auto [term, in] : llvm::zip(terms, op.getInputs()))
    inputs.push_back(drop(in, term));
  llvm::erase_if(result, isUnit);
  SymTensorType rt = GraphBuilder::typeOf(op.getResult());
  Value e = rebuildEinsum(op, terms, result, inputs, g);
  r.replaceOp(op, g.reshape(e, rt.getDims()));
  return true;
}

/// `reshape(reshape(x))` -> `reshape(x)`, and a reshape to its own shape
/// disappears.
static bool foldReshape(ReshapeOp op, PatternRewriter &r) {
  if (hasPlanSharding(op))
    return false;
  bool changed = false;
  if (auto inner = op.getInput().getDefiningOp<ReshapeOp>();
      inner && !hasPlanSharding(inner)) {
    r.modifyOpInPlace(op,
                      [&] { op.getInputMutable().assign(inner.getInput()); });
    changed = true;
  }
  if (GraphBuilder::typeOf(op.getInput()).getDims() !=
      GraphBuilder::typeOf(op.getResult()).getDims())
    return changed;
  r.replaceOp(op, op.getInput());
  return true;
}

namespace {
/// A rewrite of this file as a pattern: it rewrites (and succeeds) or
/// leaves the IR as it was.
template <typename OpT> struct RewriteFn : OpRewritePattern<OpT> {
  using Fn = bool (*)(OpT, PatternRewriter &);
  RewriteFn(MLIRContext *ctx, Fn fn, PatternBenefit benefit)
      : OpRewritePattern<OpT>(ctx, benefit), fn(fn) {}
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &r) const override {
    if (hasPlanSharding(op))
      return failure();
    return success(fn(op, r));
  }
  Fn fn;
};
} // namespace

void mlir::stage::populateUnflattenPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<RewriteFn<EwiseOp>>(ctx, sinkThroughEwise, 1);
  // An einsum tries its rewrites in this order.
  patterns.add<RewriteFn<EinsumOp>>(ctx, foldTransposeIntoEinsum, 3);
  patterns.add<RewriteFn<EinsumOp>>(ctx, dropUnitIndices, 2);
  patterns.add<RewriteFn<EinsumOp>>(ctx, absorbIntoEinsum, 1);
  patterns.add<RewriteFn<ReshapeOp>>(ctx, foldReshape, 1);
  patterns.add<RewriteFn<TransposeOp>>(ctx, foldEinsumIntoTranspose, 1);
}
