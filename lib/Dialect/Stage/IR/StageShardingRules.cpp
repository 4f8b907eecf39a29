//===- StageShardingRules.cpp - Each op's sharding rule -------------------===//
//
// The ShardingRuleOpInterface of the ops stage-shard splits by rule; the
// others (parameters, inputs, communication, the structural ops, and the
// experts' dispatch and combine) are planned by hand in stage-shard.
//
//===----------------------------------------------------------------------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"

using namespace mlir;
using namespace mlir::stage;

static unsigned rankOf(Value v) { return getTensorType(v).getRank(); }

/// Operands and results of the shape of `shapeOf` (operands of lower rank
/// broadcast from the trailing dimensions).
static FactorModel elementwiseRule(Operation *op, Value shapeOf) {
  FactorModel m;
  SmallVector<int> out = m.addFactors(rankOf(shapeOf));
  auto trailing = [&](Value v) {
    return SmallVector<int>(ArrayRef<int>(out).take_back(rankOf(v)));
  };
  for (Value v : op->getOperands())
    m.operands.push_back(trailing(v));
  for (Value v : op->getResults())
    m.results.push_back(trailing(v));
  return m;
}

/// An elementwise rule whose last dimension stays whole (a normalization,
/// a rotation of pairs).
static FactorModel rowwiseRule(Operation *op, Value shapeOf) {
  FactorModel m = elementwiseRule(op, shapeOf);
  m.freeze(m.results[0].back());
  return m;
}

/// An elementwise rule that keeps dimension `dim` whole, linear (slices,
/// pads, concatenations).
static FactorModel alongDimRule(Operation *op, Value shapeOf, int64_t dim) {
  FactorModel m = elementwiseRule(op, shapeOf);
  m.freeze(m.results[0][dim]);
  m.linear = true;
  return m;
}

FactorModel EinsumOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m;
  std::map<char, int> ids;
  auto factor = [&](char c) {
    auto it = ids.find(c);
    if (it != ids.end())
      return it->second;
    return ids[c] = m.addFactor();
  };
  for (const std::string &term : getInputIndices()) {
    SmallVector<int> dims;
    for (char c : term)
      dims.push_back(factor(c));
    m.operands.push_back(dims);
  }
  SmallVector<int> res;
  for (char c : getResultIndices())
    res.push_back(factor(c));
  m.results.push_back(res);
  m.summable.set(); // contracted indices sum
  m.linear = getInputs().size() == 2;
  return m;
}

FactorModel EwiseOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m = elementwiseRule(*this, getResult());
  EwiseKind k = getKind();
  m.linear = k == EwiseKind::add || k == EwiseKind::sub ||
             k == EwiseKind::neg || k == EwiseKind::copy ||
             k == EwiseKind::cast;
  return m;
}

FactorModel DropoutOp::getShardingRule(const ShardingRuleOptions &) {
  return elementwiseRule(*this, getInput());
}

FactorModel NormOp::getShardingRule(const ShardingRuleOptions &) {
  return rowwiseRule(*this, getInput());
}

FactorModel NormGradOp::getShardingRule(const ShardingRuleOptions &) {
  // dx like x; dw and db sum over every row.
  FactorModel m;
  SmallVector<int> x = m.addFactors(rankOf(getInput()));
  m.freeze(x.back());
  m.operands = {x, x};
  if (getWeight())
    m.operands.push_back({x.back()});
  m.results.push_back(x);
  for (unsigned i = 0; i < getParamGrads().size(); ++i)
    m.results.push_back({x.back()});
  m.summable.set();
  return m;
}

FactorModel SoftmaxOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m = elementwiseRule(*this, getResult());
  m.freeze(m.results[0][getDim()]);
  return m;
}

FactorModel SoftmaxGradOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m = elementwiseRule(*this, getResult());
  m.freeze(m.results[0][getDim()]);
  return m;
}

FactorModel RopeOp::getShardingRule(const ShardingRuleOptions &) {
  return rowwiseRule(*this, getInput());
}

FactorModel CrossEntropyOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m;
  SmallVector<int> l = m.addFactors(rankOf(getLogits()));
  m.operands = {l, SmallVector<int>(ArrayRef<int>(l).drop_back())};
  m.results = {{}};
  m.summable.set();
  return m;
}

FactorModel CrossEntropyGradOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m;
  SmallVector<int> l = m.addFactors(rankOf(getLogits()));
  m.operands = {l, SmallVector<int>(ArrayRef<int>(l).drop_back())};
  m.results = {l};
  return m;
}

FactorModel ReduceOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m;
  SmallVector<int> in = m.addFactors(rankOf(getInput())), out;
  for (unsigned i = 0; i < in.size(); ++i) {
    if (llvm::is_contained(getDims(), int64_t(i))) {
      if (getKind() == ReduceKind::max)
        m.freeze(in[i]);
      else
        m.summable.set(in[i]);
    } else {
      out.push_back(in[i]);
    }
  }
  m.operands = {in};
  m.results = {out};
  m.linear = getKind() != ReduceKind::max;
  return m;
}

FactorModel TransposeOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m;
  SmallVector<int> in = m.addFactors(rankOf(getInput())), out;
  for (int64_t p : getPermutation())
    out.push_back(in[p]);
  m.operands = {in};
  m.results = {out};
  m.linear = true;
  return m;
}

/// Dimension groups of a reshape that hold the same elements: 1:1 pairs and
/// merges/splits. A merged (or split) group keeps the leading dimension's
/// factor; the others must stay unsplit.
FactorModel ReshapeOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m;
  auto in = getInput().getType();
  auto out = getResult().getType();
  SmallVector<int> inF(in.getRank(), -1), outF(out.getRank(), -1);
  // Pair equal dimensions, or a run of one side whose product equals one
  // dimension of the other (a merge or a split).
  auto group = [&](unsigned i0, unsigned i1, unsigned j0, unsigned j1) {
    int lead = m.addFactor();
    inF[i0] = outF[j0] = lead;
    for (unsigned k = i0 + 1; k < i1; ++k)
      m.freeze(inF[k] = m.addFactor());
    for (unsigned k = j0 + 1; k < j1; ++k)
      m.freeze(outF[k] = m.addFactor());
  };
  unsigned i = 0, j = 0;
  sym::Expr one(1);
  while (i < in.getRank() && j < out.getRank()) {
    // A unit dimension only one side has pairs with nothing (a token's
    // [1, B] becoming [B, 1] moves no split onto the 1).
    if (in.getDim(i) == one && out.getDim(j) != one) {
      m.freeze(inF[i++] = m.addFactor());
      continue;
    }
    if (out.getDim(j) == one && in.getDim(i) != one) {
      m.freeze(outF[j++] = m.addFactor());
      continue;
    }
    if (in.getDim(i) == out.getDim(j)) {
      group(i, i + 1, j, j + 1);
      ++i, ++j;
      continue;
    }
    bool matched = false;
    sym::Expr p = in.getDim(i);
    for (unsigned k = i + 1; k < in.getRank() && !matched; ++k) {
      p *= in.getDim(k);
      if (p == out.getDim(j)) {
        group(i, k + 1, j, j + 1);
        i = k + 1, ++j, matched = true;
      }
    }
    if (!matched)
      p = out.getDim(j);
    for (unsigned k = j + 1; !matched && k < out.getRank(); ++k) {
      p *= out.getDim(k);
      if (p == in.getDim(i)) {
        group(i, i + 1, j, k + 1);
        ++i, j = k + 1, matched = true;
      }
    }
    if (!matched)
      break;
  }
  // Dimensions no group explains stay whole.
  for (SmallVector<int> *factors : {&inF, &outF})
    for (int &f : *factors)
      if (f < 0)
        m.freeze(f = m.addFactor());
  m.operands.push_back(inF);
  m.results.push_back(outF);
  m.linear = true;
  return m;
}

FactorModel SliceOp::getShardingRule(const ShardingRuleOptions &) {
  return alongDimRule(*this, getResult(), getDim());
}

FactorModel PadOp::getShardingRule(const ShardingRuleOptions &) {
  return alongDimRule(*this, getResult(), getDim());
}

// Written from position 0 (a prompt), the positions may stay split (each
// context-parallel rank caches its part); appended later, they are whole.
FactorModel CacheWriteOp::getShardingRule(const ShardingRuleOptions &) {
  if (getOffset().getValue().isZero()) {
    FactorModel m = elementwiseRule(*this, getResult());
    m.linear = true;
    return m;
  }
  return alongDimRule(*this, getResult(), getDim());
}

FactorModel ConcatOp::getShardingRule(const ShardingRuleOptions &) {
  return alongDimRule(*this, getResult(), getDim());
}

FactorModel BroadcastOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m;
  SmallVector<int> out = m.addFactors(rankOf(getResult())), in;
  for (unsigned i = 0; i < out.size(); ++i)
    if (!llvm::is_contained(getDims(), int64_t(i)))
      in.push_back(out[i]);
  m.operands = {in};
  m.results = {out};
  m.linear = true;
  return m;
}

FactorModel EmbeddingOp::getShardingRule(const ShardingRuleOptions &) {
  // Vocabulary-parallel lookup: a split table leaves a partial sum.
  FactorModel m;
  SmallVector<int> ids = m.addFactors(rankOf(getIds()));
  int fv = m.addFactor(), fd = m.addFactor();
  m.freeze(fd);
  m.summable.set(fv);
  SmallVector<int> out = ids;
  out.push_back(fd);
  m.operands = {{fv, fd}, ids};
  m.results = {out};
  return m;
}

FactorModel EmbeddingGradOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m;
  SmallVector<int> ids = m.addFactors(rankOf(getIds()));
  int fv = m.addFactor(), fd = m.addFactor();
  m.freeze(fd);
  for (int f : ids)
    m.summable.set(f);
  SmallVector<int> dy = ids;
  dy.push_back(fd);
  m.operands = {dy, ids};
  m.results = {{fv, fd}};
  return m;
}

/// q [b, s, h, d], k [b, t, g, d], v [b, t, g, e], o and its gradient
/// [b, s, h, e]; the gradient's results are those of q, k and v.
/// `sharedKV`: every rank keeps all key/value heads (more ranks than heads,
/// or one head shared by all queries); `narrowValue`: the result reads only
/// part of the value's head dim.
static FactorModel attentionRule(bool sharedKV, bool narrowValue,
                                 bool gradient) {
  FactorModel m;
  int fb = m.addFactor(), fs = m.addFactor(), fh = m.addFactor(),
      fd = m.addFactor(), ft = m.addFactor(), fe = m.addFactor();
  int fg = fh;
  if (sharedKV) {
    fg = m.addFactor();
    m.freeze(fg);
  }
  int fo = fe;
  if (narrowValue) {
    fo = m.addFactor();
    m.freeze(fo);
  }
  // Every query needs every key: the key sequence stays whole (context
  // parallelism gathers it), head dims are never split.
  m.freeze(fd);
  m.freeze(fe);
  m.freeze(ft);
  // Split queries stay split: gathering them would repeat the score matrix,
  // the bulk of the work, on every rank of the axis.
  m.keepSplit.set(fb);
  m.keepSplit.set(fs);
  m.keepSplit.set(fh);
  SmallVector<int> q{fb, fs, fh, fd}, k{fb, ft, fg, fd}, v{fb, ft, fg, fe},
      o{fb, fs, fh, fo};
  if (!gradient) {
    m.operands = {q, k, v};
    m.results = {o};
    return m;
  }
  m.operands = {q, k, v, o, o};
  m.results = {q, k, v};
  // Key and value gradients sum over the queries of each rank, and over
  // the query heads of a replicated kv head's group.
  m.summable.set(fs);
  m.summable.set(fb);
  if (sharedKV)
    m.summable.set(fh);
  return m;
}

/// One key/value head for several query heads (multi-query attention, the
/// absorbed latent attention) is shared by every rank.
static bool singleSharedHead(SymTensorType q, SymTensorType k) {
  return k.getDim(2) == sym::Expr(1) && q.getDim(2) != sym::Expr(1);
}

FactorModel AttentionOp::getShardingRule(const ShardingRuleOptions &options) {
  return attentionRule(
      options.replicateKV ||
          singleSharedHead(getQuery().getType(), getKey().getType()),
      bool(getValueWidth()), /*gradient=*/false);
}

FactorModel
AttentionGradOp::getShardingRule(const ShardingRuleOptions &options) {
  return attentionRule(
      options.replicateKV ||
          singleSharedHead(getQuery().getType(), getKey().getType()),
      /*narrowValue=*/false, /*gradient=*/true);
}

FactorModel TopKOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m;
  SmallVector<int> s = m.addFactors(rankOf(getScores()));
  m.freeze(s.back());
  SmallVector<int> r = s;
  r.back() = m.addFactor();
  m.freeze(r.back());
  m.operands = {s};
  m.results = {r, r};
  return m;
}

FactorModel TopKGradOp::getShardingRule(const ShardingRuleOptions &) {
  FactorModel m;
  SmallVector<int> s = m.addFactors(rankOf(getResult()));
  m.freeze(s.back());
  SmallVector<int> k = s;
  k.back() = m.addFactor();
  m.freeze(k.back());
  m.operands = {k, k};
  m.results = {s};
  return m;
}
