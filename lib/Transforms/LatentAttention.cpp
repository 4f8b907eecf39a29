//===- LatentAttention.cpp - Multi-head latent attention for serving ------===//

#include "LatentAttention.h"

#include "Stage/Analysis/ParameterAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageBuilder.h"

#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

namespace {

/// keys = concat(slice(E), broadcast(k_pe)), values = slice(E), with E an
/// up-projection of the latent by a layer's slice of a weight.
struct Match {
  SliceOp keyPart, valuePart;
  EinsumOp upProjection;
  BroadcastOp keyRope;
  ConcatOp query;
  BlockArgument weight; // the layer's slice, in `stack`'s body
  RepeatOp stack;
};

std::optional<Match> match(AttentionOp a) {
  Match m;
  auto key = a.getKey().getDefiningOp<ConcatOp>();
  m.query = a.getQuery().getDefiningOp<ConcatOp>();
  m.valuePart = a.getValue().getDefiningOp<SliceOp>();
  if (!key || !m.query || !m.valuePart || key.getInputs().size() != 2 ||
      m.query.getInputs().size() != 2 || key.getDim() != 3 ||
      m.query.getDim() != 3 || m.valuePart.getDim() != 3)
    return std::nullopt;
  m.keyPart = key.getInputs()[0].getDefiningOp<SliceOp>();
  m.keyRope = key.getInputs()[1].getDefiningOp<BroadcastOp>();
  if (!m.keyPart || !m.keyRope || m.keyPart.getDim() != 3 ||
      m.keyPart.getInput() != m.valuePart.getInput())
    return std::nullopt;
  m.upProjection = m.valuePart.getInput().getDefiningOp<EinsumOp>();
  if (!m.upProjection || m.upProjection.getInputs().size() != 2)
    return std::nullopt;
  m.weight = dyn_cast<BlockArgument>(m.upProjection.getInputs()[1]);
  if (!m.weight)
    return std::nullopt;
  m.stack = dyn_cast<RepeatOp>(m.weight.getOwner()->getParentOp());
  if (!m.stack || m.weight.getArgNumber() < m.stack.getNumCarried() ||
      !m.stack.getSlices()[m.weight.getArgNumber() - m.stack.getNumCarried()]
           .getDefiningOp<ParamOp>())
    return std::nullopt;
  return m;
}

/// A weight of its own for `size` columns of the last dimension of `whole`
/// (a stacked weight), added to `stack`'s slices; returns the layer's slice
/// of it.
Value splitOff(RepeatOp stack, ParamOp whole, const Expr &size,
               StringRef suffix) {
  OpBuilder b(whole);
  b.setInsertionPointAfter(whole);
  auto t = cast<SymTensorType>(whole.getType());
  SmallVector<Expr> dims = t.getDims();
  dims.back() = size;
  GraphBuilder g(b, whole.getLoc());
  Value part = g.param((whole.getName() + "." + suffix).str(), dims,
                       t.getElementType(), whole.getGroup().value_or(""));
  stack.getSlicesMutable().append(part);
  return stack.getBodyBlock().addArgument(
      cast<SymTensorType>(part.getType()).dropLeadingDim(), whole.getLoc());
}

} // namespace

SmallVector<LatentAttention> mlir::stage::splitLatentAttentions(Block &body) {
  SmallVector<AttentionOp> attentions;
  body.walk([&](AttentionOp a) { attentions.push_back(a); });
  SmallVector<LatentAttention> out;
  for (AttentionOp a : attentions) {
    std::optional<Match> m = match(a);
    if (!m)
      continue;
    unsigned sliceIndex = m->weight.getArgNumber() - m->stack.getNumCarried();
    auto whole = m->stack.getSlices()[sliceIndex].getDefiningOp<ParamOp>();
    Value keyUp =
        splitOff(m->stack, whole, m->keyPart.getType().getDim(3), "k");
    Value valueUp =
        splitOff(m->stack, whole, m->valuePart.getType().getDim(3), "v");
    // Keys and values from their own up-projections: the same FLOPs.
    OpBuilder b(m->upProjection);
    GraphBuilder g(b, m->upProjection.getLoc());
    StringRef spec = m->upProjection.getSpec();
    Value latent = m->upProjection.getInputs()[0];
    Value keys = g.einsum(spec, {latent, keyUp});
    Value values = g.einsum(spec, {latent, valueUp});
    m->keyPart.replaceAllUsesWith(keys);
    m->valuePart.replaceAllUsesWith(values);
    m->keyPart.erase();
    m->valuePart.erase();
    if (m->upProjection->use_empty())
      m->upProjection.erase();
    if (m->weight.use_empty()) {
      m->stack.getSlicesMutable().erase(sliceIndex);
      m->stack.getBodyBlock().eraseArgument(m->weight.getArgNumber());
      if (whole->use_empty())
        whole.erase();
    }
    out.push_back({a, m->query.getInputs()[0], m->query.getInputs()[1], latent,
                   m->keyRope.getInput(), keyUp, valueUp});
  }
  return out;
}

Value mlir::stage::buildLatentEntry(OpBuilder &b, Location loc, Value latent,
                                    Value keyRope) {
  GraphBuilder g(b, loc);
  auto entry = [&](Value v) {
    SmallVector<Expr> dims = GraphBuilder::typeOf(v).getDims();
    dims.insert(dims.end() - 1, Expr(1));
    return g.reshape(v, dims);
  };
  return g.concat({entry(latent), entry(keyRope)}, 3);
}

void mlir::stage::absorbLatentAttention(AttentionOp op,
                                        const LatentAttention &l,
                                        Value cached) {
  OpBuilder b(op);
  GraphBuilder g(b, op.getLoc());
  // q W_UK^T: the query in the latent space, one score per cached latent.
  Value queryLatent = g.einsum("bshk,chk->bshc", {l.queryNope, l.keyUp});
  Value query = g.concat({queryLatent, l.queryRope}, 3);
  Expr width = GraphBuilder::typeOf(l.latent).getDims().back();
  SymTensorType qt = GraphBuilder::typeOf(query);
  SmallVector<Expr> dims = qt.getDims();
  dims.back() = width;
  auto attention = AttentionOp::create(
      b, op.getLoc(), qt.withDims(dims), query, cached, cached,
      /*causal=*/false, ExprAttr::get(op.getContext(), width),
      op.getWindowAttr(), op.getSoftcap());
  Value out = g.einsum("bshc,chk->bshk", {attention, l.valueUp});
  op.replaceAllUsesWith(out);
  Block *block = op->getBlock();
  op.erase();
  // The old keys, values and query are read by nothing now.
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &o : llvm::make_early_inc_range(llvm::reverse(*block)))
      if (o.use_empty() && isPure(&o) && !o.hasTrait<OpTrait::IsTerminator>() &&
          !isa<CacheWriteOp>(o)) {
        o.erase();
        changed = true;
      }
  }
}
