//===- FactorModel.cpp - Ops as index spaces for sharding -----------------===//

#include "FactorModel.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::stage;

static unsigned rankOf(Value v) {
  return cast<SymTensorType>(v.getType()).getRank();
}

namespace {
/// Builds models whose operands and results share one index space.
class ModelBuilder {
public:
  explicit ModelBuilder(Operation *op) : op(op) {}

  /// Result 0's dimensions as fresh factors; `out` maps them.
  SmallVector<int> fresh(unsigned rank) {
    SmallVector<int> f;
    for (unsigned i = 0; i < rank; ++i)
      f.push_back(m.addFactor());
    return f;
  }
  /// The trailing `rank` factors of `of` (trailing broadcast).
  static SmallVector<int> trailing(ArrayRef<int> of, unsigned rank) {
    return SmallVector<int>(of.take_back(rank));
  }
  FactorModel &model() { return m; }
  Operation *op;

private:
  FactorModel m;
};
} // namespace

static FactorModel einsumModel(EinsumOp op) {
  ModelBuilder b(op);
  FactorModel &m = b.model();
  std::map<char, int> ids;
  auto factor = [&](char c) {
    auto it = ids.find(c);
    if (it != ids.end())
      return it->second;
    return ids[c] = m.addFactor();
  };
  for (const std::string &term : op.getInputIndices()) {
    SmallVector<int> dims;
    for (char c : term)
      dims.push_back(factor(c));
    m.operands.push_back(dims);
  }
  SmallVector<int> res;
  for (char c : op.getResultIndices())
    res.push_back(factor(c));
  m.results.push_back(res);
  m.summable.set(); // contracted indices sum
  m.linear = op.getInputs().size() == 2;
  return m;
}

/// Operands and results of the result's shape (operands trailing).
static FactorModel elementwiseModel(Operation *op, Value shapeOf) {
  ModelBuilder b(op);
  FactorModel &m = b.model();
  SmallVector<int> out = b.fresh(rankOf(shapeOf));
  for (Value v : op->getOperands())
    m.operands.push_back(ModelBuilder::trailing(out, rankOf(v)));
  for (Value v : op->getResults())
    m.results.push_back(ModelBuilder::trailing(out, rankOf(v)));
  return m;
}

/// Dimension groups of a reshape that hold the same elements: 1:1 pairs and
/// merges/splits. A merged (or split) group keeps the leading dimension's
/// factor; the others must stay unsplit.
static FactorModel reshapeModel(ReshapeOp op) {
  ModelBuilder b(op);
  FactorModel &m = b.model();
  auto in = cast<SymTensorType>(op.getInput().getType());
  auto out = cast<SymTensorType>(op.getResult().getType());
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
  while (i < in.getRank() && j < out.getRank()) {
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
  for (int &f : inF)
    if (f < 0) {
      f = m.addFactor();
      m.freeze(f);
    }
  for (int &f : outF)
    if (f < 0) {
      f = m.addFactor();
      m.freeze(f);
    }
  m.operands.push_back(inF);
  m.results.push_back(outF);
  m.linear = true;
  return m;
}

static FactorModel attentionModel(Operation *op, bool replicateKV,
                                  bool gradient) {
  // q [b, s, h, d], k [b, t, g, d], v [b, t, g, e], o/do [b, s, h, e].
  ModelBuilder b(op);
  FactorModel &m = b.model();
  int fb = m.addFactor(), fs = m.addFactor(), fh = m.addFactor(),
      fd = m.addFactor(), ft = m.addFactor(), fe = m.addFactor();
  int fg = fh;
  if (replicateKV) {
    fg = m.addFactor();
    m.freeze(fg);
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
      o{fb, fs, fh, fe};
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
  if (replicateKV)
    m.summable.set(fh);
  return m;
}

FailureOr<FactorModel> mlir::stage::getFactorModel(Operation *op,
                                                   bool replicateKV) {
  return llvm::TypeSwitch<Operation *, FailureOr<FactorModel>>(op)
      .Case<EinsumOp>([](EinsumOp e) { return einsumModel(e); })
      .Case<EwiseOp>([](EwiseOp e) {
        FactorModel m = elementwiseModel(e, e.getResult());
        EwiseKind k = e.getKind();
        m.linear = k == EwiseKind::add || k == EwiseKind::sub ||
                   k == EwiseKind::neg || k == EwiseKind::copy ||
                   k == EwiseKind::cast;
        return m;
      })
      .Case<DropoutOp>([](DropoutOp d) { return elementwiseModel(d, d.getInput()); })
      .Case<NormOp>([](NormOp n) {
        FactorModel m = elementwiseModel(n, n.getInput());
        m.freeze(m.results[0].back());
        return m;
      })
      .Case<NormGradOp>([](NormGradOp n) {
        // dx like x; dw and db sum over every row.
        ModelBuilder b(n);
        FactorModel &m = b.model();
        SmallVector<int> x = b.fresh(rankOf(n.getInput()));
        m.freeze(x.back());
        m.operands = {x, x};
        if (n.getWeight())
          m.operands.push_back({x.back()});
        m.results.push_back(x);
        for (unsigned i = 0; i < n.getParamGrads().size(); ++i)
          m.results.push_back({x.back()});
        m.summable.set();
        return m;
      })
      .Case<SoftmaxOp, SoftmaxGradOp>([](auto s) {
        FactorModel m = elementwiseModel(s, s->getResult(0));
        m.freeze(m.results[0][s.getDim()]);
        return m;
      })
      .Case<RopeOp>([](RopeOp r) {
        FactorModel m = elementwiseModel(r, r.getInput());
        m.freeze(m.results[0].back());
        return m;
      })
      .Case<CrossEntropyGradOp>([](CrossEntropyGradOp c) {
        ModelBuilder b(c);
        FactorModel &m = b.model();
        SmallVector<int> l = b.fresh(rankOf(c.getLogits()));
        m.operands = {l, SmallVector<int>(ArrayRef<int>(l).drop_back())};
        m.results = {l};
        return m;
      })
      .Case<ReduceOp>([](ReduceOp r) {
        ModelBuilder b(r);
        FactorModel &m = b.model();
        SmallVector<int> in = b.fresh(rankOf(r.getInput())), out;
        for (unsigned i = 0; i < in.size(); ++i) {
          if (llvm::is_contained(r.getDims(), int64_t(i))) {
            if (r.getKind() == ReduceKind::max)
              m.freeze(in[i]);
            else
              m.summable.set(in[i]);
          } else {
            out.push_back(in[i]);
          }
        }
        m.operands = {in};
        m.results = {out};
        m.linear = r.getKind() != ReduceKind::max;
        return m;
      })
      .Case<TransposeOp>([](TransposeOp t) {
        ModelBuilder b(t);
        FactorModel &m = b.model();
        SmallVector<int> in = b.fresh(rankOf(t.getInput())), out;
        for (int64_t p : t.getPermutation())
          out.push_back(in[p]);
        m.operands = {in};
        m.results = {out};
        m.linear = true;
        return m;
      })
      .Case<ReshapeOp>([](ReshapeOp r) { return reshapeModel(r); })
      .Case<SliceOp, PadOp>([](auto s) {
        FactorModel m = elementwiseModel(s, s->getResult(0));
        m.freeze(m.results[0][s.getDim()]);
        m.linear = true;
        return m;
      })
      .Case<ConcatOp>([](ConcatOp c) {
        FactorModel m = elementwiseModel(c, c.getResult());
        m.freeze(m.results[0][c.getDim()]);
        m.linear = true;
        return m;
      })
      .Case<BroadcastOp>([](BroadcastOp bc) {
        ModelBuilder b(bc);
        FactorModel &m = b.model();
        SmallVector<int> out = b.fresh(rankOf(bc.getResult())), in;
        for (unsigned i = 0; i < out.size(); ++i)
          if (!llvm::is_contained(bc.getDims(), int64_t(i)))
            in.push_back(out[i]);
        m.operands = {in};
        m.results = {out};
        m.linear = true;
        return m;
      })
      .Case<EmbeddingOp>([](EmbeddingOp e) {
        // Vocabulary-parallel lookup: a split table leaves a partial sum.
        ModelBuilder b(e);
        FactorModel &m = b.model();
        SmallVector<int> ids = b.fresh(rankOf(e.getIds()));
        int fv = m.addFactor(), fd = m.addFactor();
        m.freeze(fd);
        m.summable.set(fv);
        SmallVector<int> out = ids;
        out.push_back(fd);
        m.operands = {{fv, fd}, ids};
        m.results = {out};
        return m;
      })
      .Case<EmbeddingGradOp>([](EmbeddingGradOp e) {
        ModelBuilder b(e);
        FactorModel &m = b.model();
        SmallVector<int> ids = b.fresh(rankOf(e.getIds()));
        int fv = m.addFactor(), fd = m.addFactor();
        m.freeze(fd);
        for (int f : ids)
          m.summable.set(f);
        SmallVector<int> dy = ids;
        dy.push_back(fd);
        m.operands = {dy, ids};
        m.results = {{fv, fd}};
        return m;
      })
      .Case<CrossEntropyOp>([](CrossEntropyOp c) {
        ModelBuilder b(c);
        FactorModel &m = b.model();
        SmallVector<int> l = b.fresh(rankOf(c.getLogits()));
        m.operands = {l, SmallVector<int>(ArrayRef<int>(l).drop_back())};
        m.results = {{}};
        m.summable.set();
        return m;
      })
      .Case<AttentionOp>([&](AttentionOp a) {
        return attentionModel(a, replicateKV, false);
      })
      .Case<AttentionGradOp>([&](AttentionGradOp a) {
        return attentionModel(a, replicateKV, true);
      })
      .Case<TopKOp>([](TopKOp t) {
        ModelBuilder b(t);
        FactorModel &m = b.model();
        SmallVector<int> s = b.fresh(rankOf(t.getScores()));
        m.freeze(s.back());
        SmallVector<int> r = s;
        r.back() = m.addFactor();
        m.freeze(r.back());
        m.operands = {s};
        m.results = {r, r};
        return m;
      })
      .Case<TopKGradOp>([](TopKGradOp t) {
        ModelBuilder b(t);
        FactorModel &m = b.model();
        SmallVector<int> s = b.fresh(rankOf(t.getResult()));
        m.freeze(s.back());
        SmallVector<int> k = s;
        k.back() = m.addFactor();
        m.freeze(k.back());
        m.operands = {k, k};
        m.results = {s};
        return m;
      })
      .Default([](Operation *) { return failure(); });
}
