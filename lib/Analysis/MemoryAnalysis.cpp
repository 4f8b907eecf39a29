//===- MemoryAnalysis.cpp - Memory of a rank over one iteration -----------===//

#include "Stage/Analysis/MemoryAnalysis.h"

#include "Stage/Analysis/BackwardSplit.h"
#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Analysis/StepTimes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <limits>

using namespace mlir;
using namespace mlir::stage;

/// Sizes in whole bytes, for the peaks of a stage and the working sets: exact
/// in integers (sums of products of counts and sizes below 2^63 each), and far
/// cheaper than rationals.
using Bytes = __int128;

/// `r` as Bytes, if a whole number of bytes.
static bool whole(const sym::Rational &r, Bytes &out) {
  std::optional<int64_t> v = r.isInteger() ? r.toInt64() : std::nullopt;
  out = v ? Bytes(*v) : 0;
  return bool(v);
}
static bool whole(const sym::Rational &r, sym::Rational &out) {
  out = r;
  return true;
}
/// Whether `v` converts back (a peak past 2^63 bytes takes the rationals).
static bool fits(Bytes v) {
  return v >= std::numeric_limits<int64_t>::min() &&
         v <= std::numeric_limits<int64_t>::max();
}
static bool fits(const sym::Rational &) { return true; }
static sym::Rational rational(Bytes v) { return sym::Rational(int64_t(v)); }
static sym::Rational rational(const sym::Rational &r) { return r; }

namespace {

sym::Expr bytesOf(Value v) {
  auto t = dyn_cast<SymTensorType>(v.getType());
  return t ? t.getSizeInBytes() : sym::Expr();
}

/// A view (reshape, transpose, local split) aliases its operand: no buffer.
/// A cache write's result is the KV cache, held for the whole run.
bool isView(Operation *op) {
  if (isa<LocalSplitOp, CacheWriteOp>(op))
    return true;
  auto c = dyn_cast<CostOpInterface>(op);
  if (!c || isa<CollectiveOpInterface>(op))
    return false;
  Cost cost = getOpCost(c);
  return cost.flops().isZero() && cost.bytes.isZero();
}

/// Where a block's buffers start and stop being live, derived from the IR
/// once per block while a SymbolicCache lives (a block is always asked with
/// the same values excluded: its kept or returned ones). Buffers are named
/// by their type's index in `ofType` (values of one type have one size).
struct BlockLiveness {
  struct Position {
    SmallVector<uint32_t, 2> born;
    /// A layer stack's body, whose own working set adds here.
    RepeatOp inner;
    SmallVector<uint32_t, 2> dying;
  };
  std::vector<Position> positions;
  /// The first buffer of each type (where a size that does not evaluate
  /// is reported).
  std::vector<Value> ofType;

  BlockLiveness(Block &block, const llvm::DenseSet<Value> &excluded) {
    // Position of each op, and where each value defined here is last read.
    llvm::DenseMap<Operation *, unsigned> index;
    for (auto [i, op] : llvm::enumerate(block))
      index[&op] = unsigned(i);
    positions.resize(index.size());
    llvm::DenseMap<Type, uint32_t> typeIndex;
    for (auto [i, op] : llvm::enumerate(block)) {
      if (auto rep = dyn_cast<RepeatOp>(&op))
        positions[i].inner = rep;
      if (isa<ParamOp>(op) || isView(&op))
        continue;
      for (Value r : op.getResults()) {
        if (excluded.contains(r) || !isa<SymTensorType>(r.getType()))
          continue;
        auto [it, added] =
            typeIndex.try_emplace(r.getType(), uint32_t(ofType.size()));
        if (added)
          ofType.push_back(r);
        positions[i].born.push_back(it->second);
        unsigned last = unsigned(i);
        for (Operation *user : r.getUsers())
          if (Operation *a = block.findAncestorOpInBlock(*user))
            last = std::max(last, index[a]);
        positions[last].dying.push_back(it->second);
      }
    }
  }
};

class WorkingSet {
public:
  WorkingSet(const sym::Bindings &b) : bindings(&b) {}
  /// Sizes evaluate under `b` from now on (a decode step binds its index).
  void setBindings(const sym::Bindings &b) {
    bindings = &b;
    sizes.clear();
  }

  /// The largest sum of simultaneously live buffers while `block` runs,
  /// not counting the values in `excluded` (kept or accounted elsewhere),
  /// the block's arguments and the weights.
  FailureOr<sym::Rational> peak(Block &block,
                                const llvm::DenseSet<Value> &excluded) {
    return peak(*getLiveness(block, [&] { return excluded; }));
  }

private:
  /// (Held by the caller: without a SymbolicCache it is the only owner.)
  static std::shared_ptr<const BlockLiveness>
  getLiveness(Block &block, function_ref<llvm::DenseSet<Value>()> excluded) {
    static const char tag = 0;
    return memoizeDerived<BlockLiveness>(
        &tag, &block, [&] { return BlockLiveness(block, excluded()); });
  }
  FailureOr<sym::Rational> peak(const BlockLiveness &liveness);
  /// The sweep in `Num` (whole bytes, else rationals); false if a size is
  /// not whole bytes or a sum passes 2^63.
  template <typename Num>
  bool sweep(const BlockLiveness &liveness, ArrayRef<sym::Rational> sizes,
             ArrayRef<sym::Rational> inner, sym::Rational &out);

  FailureOr<sym::Rational> size(Value v) {
    // Values of one type have one size under the bindings.
    auto it = sizes.find(v.getType());
    if (it != sizes.end())
      return it->second;
    sym::Result<sym::Rational> r = bytesOf(v).evaluateRational(*bindings);
    if (!r) {
      emitError(v.getLoc()) << "memory: " << r.error();
      return failure();
    }
    return sizes.try_emplace(v.getType(), *r).first->second;
  }
  const sym::Bindings *bindings;
  llvm::DenseMap<Type, sym::Rational> sizes;
};

template <typename Num>
bool WorkingSet::sweep(const BlockLiveness &liveness,
                       ArrayRef<sym::Rational> sizeValues,
                       ArrayRef<sym::Rational> innerValues,
                       sym::Rational &out) {
  SmallVector<Num, 16> size(sizeValues.size()), inner(innerValues.size());
  for (auto [to, from] : llvm::zip(size, sizeValues))
    if (!whole(from, to))
      return false;
  for (auto [to, from] : llvm::zip(inner, innerValues))
    if (!whole(from, to))
      return false;
  Num live(0), best(0);
  size_t nextInner = 0;
  for (const BlockLiveness::Position &at : liveness.positions) {
    Num born(0);
    for (uint32_t t : at.born)
      born = born + size[t];
    Num now = live + born;
    // A layer stack's body: its own working set, per iteration; what it
    // stacks for the backward is kept, what it carries is live here.
    if (at.inner)
      now = now + inner[nextInner++];
    if (best < now)
      best = now;
    live = live + born;
    for (uint32_t t : at.dying)
      live = live - size[t];
    if (!fits(live) || !fits(now))
      return false;
  }
  out = rational(best);
  return true;
}

FailureOr<sym::Rational> WorkingSet::peak(const BlockLiveness &liveness) {
  SmallVector<sym::Rational, 16> sizeValues;
  for (Value v : liveness.ofType) {
    FailureOr<sym::Rational> s = size(v);
    if (failed(s))
      return failure();
    sizeValues.push_back(*s);
  }
  SmallVector<sym::Rational, 2> innerValues;
  for (const BlockLiveness::Position &at : liveness.positions) {
    if (!at.inner)
      continue;
    RepeatOp rep = at.inner;
    Block &body = rep.getBodyBlock();
    FailureOr<sym::Rational> in = peak(*getLiveness(body, [&] {
      llvm::DenseSet<Value> bodyExcluded;
      for (Value v :
           body.getTerminator()->getOperands().drop_front(rep.getNumCarried()))
        bodyExcluded.insert(v);
      return bodyExcluded;
    }));
    if (failed(in))
      return failure();
    innerValues.push_back(*in);
  }
  sym::Rational out;
  if (!sweep<Bytes>(liveness, sizeValues, innerValues, out))
    sweep<sym::Rational>(liveness, sizeValues, innerValues, out);
  return out;
}

/// The bytes a value is, bound.
FailureOr<sym::Rational> bound(Operation *at, const sym::Expr &e,
                               const sym::Bindings &b, StringRef what) {
  sym::Result<sym::Rational> r = e.evaluateRational(b);
  if (!r)
    return at->emitError("memory: ") << what << ": " << r.error();
  return *r;
}

/// A serving program: weights and caches, and the working sets of a
/// prefill and of the last decode step (the longest context).
LogicalResult analyzeServing(ServeOp serve, const sym::Bindings &b,
                             WorkingSet &ws, StageMemory &m) {
  Block &body = *serve->getBlock();
  for (auto cache : body.getOps<KVCacheOp>())
    m.kvCache += bytesOf(cache.getResult());
  if (!serve.getPrefill().empty()) {
    FailureOr<sym::Rational> t = ws.peak(serve.getPrefill().front(), {});
    if (failed(t))
      return failure();
    m.prefillTransient = *t;
  }
  if (RepeatOp loop = serve.getDecodeLoop()) {
    FailureOr<sym::Rational> n =
        bound(loop, loop.getCount().getValue(), b, "decode steps");
    if (failed(n))
      return failure();
    sym::Bindings last = b;
    last[loop.getStep()->str()] =
        std::max<int64_t>(0, int64_t(n->toDouble()) - 1);
    ws.setBindings(last);
    FailureOr<sym::Rational> t = ws.peak(serve.getDecode().front(), {});
    ws.setBindings(b);
    if (failed(t))
      return failure();
    m.decodeTransient = *t;
  }
  FailureOr<sym::Rational> held = bound(serve, m.exprs->modelStates + m.kvCache,
                                        b, "weights and KV caches");
  if (failed(held))
    return failure();
  bool decodeLarger = m.prefillTransient < m.decodeTransient;
  m.peak = *held + (decodeLarger ? m.decodeTransient : m.prefillTransient);
  m.peakAt = decodeLarger ? "the last decode step" : "prefill";
  return success();
}

} // namespace

namespace {
/// A rank class's model states and what each chunk keeps per micro-batch.
struct ClassStates : StageExprs {
  explicit ClassStates(const RankClass &cls) {
    for (Operation *chunk : cls.chunks) {
      Block &body = chunk->getRegion(0).front();
      for (auto param : body.getOps<ParamOp>()) {
        sym::Expr bytes = bytesOf(param.getResult());
        ParamKind kind = param.getKind();
        if (kind == ParamKind::master)
          masterWeights += bytes;
        else if (kind == ParamKind::exp_avg || kind == ParamKind::exp_avg_sq)
          optimizerMoments += bytes;
        else if (kind == ParamKind::grad)
          gradients += bytes;
        else
          weights += bytes;
        if (kind == ParamKind::weight)
          parameters += cast<SymTensorType>(param.getType()).getNumElements();
      }
      sym::Expr kept;
      MicrobatchesOp mb = getServe(chunk) ? nullptr : getMicrobatches(chunk);
      if (mb) {
        for (Value g : mb.getResults())
          gradients += bytesOf(g);
        for (Value v : mb.getForwardBlock().getTerminator()->getOperands())
          kept += bytesOf(v);
      }
      keptPerMicrobatch.push_back(kept);
    }
    modelStates = weights + gradients + masterWeights + optimizerMoments;
  }
};
} // namespace

namespace {
/// The expressions a chunk's numbers evaluate, derived from the IR once
/// per chunk while a SymbolicCache lives (a search evaluates them per
/// plan).
struct ChunkExprs {
  /// Per layer stack of the forward: the bytes it stacks for the
  /// backward, and its count.
  struct Stack {
    RepeatOp rep;
    sym::Expr stacked, count;
  };
  std::vector<Stack> stacks;
  /// What the forward keeps and the backward returns: not in their
  /// working sets.
  llvm::DenseSet<Value> fwdKept, bwdGrads;
  /// Split backwards: what the forward keeps for the weight gradients,
  /// and the gradients the input-gradient step holds for them.
  sym::Expr keptForWeights, heldForWeights;

  ChunkExprs(MicrobatchesOp mb, bool split) {
    Block &fwd = mb.getForwardBlock();
    for (Value v : fwd.getTerminator()->getOperands())
      fwdKept.insert(v);
    for (Value v : mb.getBackwardBlock().getTerminator()->getOperands())
      bwdGrads.insert(v);
    for (auto rep : fwd.getOps<RepeatOp>()) {
      Stack s{rep, sym::Expr(), rep.getCount().getValue()};
      for (Value r : rep.getResults().drop_front(rep.getNumCarried()))
        if (fwdKept.contains(r))
          s.stacked += bytesOf(r);
      stacks.push_back(std::move(s));
    }
    if (split)
      weightStepExprs(mb);
  }

private:
  /// What a split backward keeps between its two steps (ChunkMemory): the
  /// kept values the weight gradients read, and the values of the input-
  /// gradient step they read, once per layer that computes them.
  void weightStepExprs(MicrobatchesOp mb) {
    BackwardSplit split(mb);
    Block &fwd = mb.getForwardBlock(), &bwd = mb.getBackwardBlock();
    for (auto [v, arg] :
         llvm::zip(fwd.getTerminator()->getOperands(), bwd.getArguments()))
      if (split.readsInWeightStep(arg))
        keptForWeights += bytesOf(v);
    std::function<void(Block &, const sym::Expr &)> walk =
        [&](Block &block, const sym::Expr &count) {
          for (Operation &op : block) {
            if (auto rep = dyn_cast<RepeatOp>(op)) {
              sym::Expr inner = count * rep.getCount().getValue();
              // A layer's incoming gradient (the carried value); its slices
              // of kept stacks are counted with them.
              for (BlockArgument arg :
                   rep.getBodyBlock().getArguments().take_front(
                       rep.getNumCarried()))
                if (split.readsInWeightStep(arg))
                  heldForWeights += inner * bytesOf(arg);
              walk(rep.getBodyBlock(), inner);
              continue;
            }
            if (split.isWeightGrad(&op))
              continue;
            for (Value r : op.getResults())
              if (split.readsInWeightStep(r))
                heldForWeights += count * bytesOf(r);
          }
        };
    walk(bwd, sym::Expr(1));
  }
};
} // namespace

namespace {
/// What a stage's memory reads of one of its chunks (not a serving one).
struct ChunkNumbers {
  ChunkMemory memory;
  /// The bytes a micro-batch keeps, evaluated.
  sym::Rational kept;
};
} // namespace

/// `chunk`'s numbers under `b`; `split` when the schedule runs its weight
/// gradients apart.
static FailureOr<ChunkNumbers> chunkNumbers(Operation *chunk,
                                            const sym::Expr &keptPerMicrobatch,
                                            bool split, const sym::Bindings &b,
                                            WorkingSet &ws) {
  ChunkNumbers out;
  ChunkMemory &cm = out.memory;
  MicrobatchesOp mb = getMicrobatches(chunk);
  if (!mb) {
    // A forward-only program: its working set is all there is.
    FailureOr<sym::Rational> t = ws.peak(chunk->getRegion(0).front(), {});
    if (failed(t))
      return failure();
    cm.forwardTransient = *t;
    return out;
  }
  static const char tags[2] = {0, 0};
  std::shared_ptr<const ChunkExprs> exprs = memoizeDerived<ChunkExprs>(
      &tags[split], chunk, [&] { return ChunkExprs(mb, split); });
  // Per layer: what the largest layer stack keeps, over its count.
  for (const ChunkExprs::Stack &stack : exprs->stacks) {
    FailureOr<sym::Rational> all =
        bound(mb, stack.stacked, b, "kept per layer");
    FailureOr<sym::Rational> count =
        bound(stack.rep, stack.count, b, "layer count");
    if (failed(all) || failed(count))
      return failure();
    if (count->isZero())
      continue;
    sym::Rational perLayer = *all / *count;
    if (cm.keptPerLayer < perLayer)
      cm.keptPerLayer = perLayer;
  }
  FailureOr<sym::Rational> f = ws.peak(mb.getForwardBlock(), exprs->fwdKept);
  FailureOr<sym::Rational> bw = ws.peak(mb.getBackwardBlock(), exprs->bwdGrads);
  FailureOr<sym::Rational> k =
      bound(mb, keptPerMicrobatch, b, "kept activations");
  if (failed(f) || failed(bw) || failed(k))
    return failure();
  cm.forwardTransient = *f;
  cm.backwardTransient = *bw;
  if (split) {
    FailureOr<sym::Rational> kept =
        bound(mb, exprs->keptForWeights, b, "kept for weight gradients");
    FailureOr<sym::Rational> held = bound(
        mb, exprs->heldForWeights, b, "gradients held for weight gradients");
    if (failed(kept) || failed(held))
      return failure();
    cm.keptForWeights = *kept;
    cm.heldForWeights = *held;
  }
  out.kept = *k;
  return out;
}

/// "forward of micro-batch 3 in chunk 5": what runs at a stage's peak.
static std::string describeStep(const PipelineStep &s, const RankClass &cls) {
  return (Twine(s.isForward()                    ? "forward"
                : s.kind == StepKind::WeightGrad ? "weight gradients"
                : s.kind == StepKind::InputGrad  ? "input gradient"
                                                 : "backward") +
          " of micro-batch " + Twine(s.microbatch) +
          (cls.chunks.size() > 1 ? " in chunk " + Twine(s.chunk) : Twine("")))
      .str();
}

/// A stage's sizes per chunk as `Num`: kept per micro-batch, kept for the
/// weight gradients, the forward and backward working sets. read() is false
/// if one is not a whole number of bytes (Bytes).
template <typename Num> struct ChunkSizes {
  SmallVector<Num> perMicrobatch, forWeights, fwd, bwd;
  bool read(const StageMemory &m, ArrayRef<sym::Rational> kept) {
    size_t n = m.chunks.size();
    perMicrobatch.resize(n);
    forWeights.resize(n);
    fwd.resize(n);
    bwd.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const ChunkMemory &cm = m.chunks[i];
      if (!whole(kept[i], perMicrobatch[i]) ||
          !whole(cm.keptForWeights + cm.heldForWeights, forWeights[i]) ||
          !whole(cm.forwardTransient, fwd[i]) ||
          !whole(cm.backwardTransient, bwd[i]))
        return false;
    }
    return true;
  }
};

/// The peak of a stage whose order serves one plan (ZB-V's, planned from
/// its step times): a walk of every step, in integer bytes, finds what
/// its moments would (the first moment of the largest value) for less
/// than finding them. False, with `m` unchanged, if a size is not a whole
/// number of bytes (the moments then say).
static bool walkOrder(ArrayRef<PipelineStep> order, const RankClass &cls,
                      const sym::Rational &statesBytes,
                      ArrayRef<sym::Rational> kept, StageMemory &m) {
  size_t n = cls.chunks.size();
  ChunkSizes<Bytes> sizes;
  Bytes states, peak;
  if (!whole(statesBytes, states) || !whole(m.peak, peak) ||
      !sizes.read(m, kept))
    return false;
  // Per chunk and kind of step, what it adds to the kept bytes (and
  // micro-batches in flight) before and after it runs, and what it holds
  // while it runs besides them: a forward's activations are there while it
  // runs; a backward's until it ends.
  struct Effect {
    Bytes before = 0, running = 0, after = 0;
    int64_t inFlightBefore = 0, inFlightAfter = 0;
  };
  constexpr size_t kinds = 4;
  SmallVector<Effect> effects(n * kinds);
  for (size_t c = 0; c < n; ++c) {
    auto effect = [&](StepKind k) -> Effect & {
      return effects[c * kinds + size_t(k)];
    };
    effect(StepKind::Forward) = {sizes.perMicrobatch[c], states + sizes.fwd[c],
                                 0, 1, 0};
    effect(StepKind::InputGrad) = {0, states + sizes.bwd[c],
                                   sizes.forWeights[c] - sizes.perMicrobatch[c],
                                   0, 0};
    effect(StepKind::WeightGrad) = {0, states + sizes.bwd[c],
                                    -sizes.forWeights[c], 0, -1};
    effect(StepKind::Backward) = {0, states + sizes.bwd[c],
                                  -sizes.perMicrobatch[c], 0, -1};
  }
  // Per chunk id, where its effects start (-1: not the class's chunk).
  SmallVector<int32_t> effectsAt;
  for (auto [c, id] : llvm::enumerate(cls.chunkIds)) {
    if (size_t(id) >= effectsAt.size())
      effectsAt.resize(size_t(id) + 1, -1);
    effectsAt[size_t(id)] = int32_t(c * kinds);
  }
  Bytes live = 0, peakLive = 0;
  int64_t inFlight = 0, peakInFlight = 0;
  const PipelineStep *peakAt = nullptr;
  for (const PipelineStep &st : order) {
    if (size_t(st.chunk) >= effectsAt.size() || effectsAt[st.chunk] < 0)
      return false;
    const Effect &e = effects[size_t(effectsAt[st.chunk]) + size_t(st.kind)];
    live += e.before;
    inFlight += e.inFlightBefore;
    if (peakLive < live) {
      peakLive = live;
      peakInFlight = inFlight;
    }
    Bytes now = live + e.running;
    if (peak < now) {
      peak = now;
      peakAt = &st;
    }
    live += e.after;
    inFlight += e.inFlightAfter;
  }
  if (!fits(peakLive) || !fits(peak))
    return false;
  m.peakActivations = rational(peakLive);
  m.peakInFlight = peakInFlight;
  if (peakAt) {
    m.peak = rational(peak);
    m.peakAt = describeStep(*peakAt, cls);
  }
  return true;
}

/// `states` under `b`, evaluated once per class of twin chunks (kept in
/// `evaluated`).
static FailureOr<StageMemory::Values> evaluateStates(
    func::FuncOp fn, const RankClass &cls, const ClassStates &states,
    const sym::Bindings &b,
    std::vector<std::pair<SmallVector<Operation *, 2>, StageMemory::Values>>
        &evaluated) {
  SmallVector<Operation *, 2> twins;
  for (Operation *chunk : cls.chunks)
    twins.push_back(getTwinChunk(chunk));
  for (const auto &[key, values] : evaluated)
    if (key == twins)
      return values;
  StageMemory::Values v;
  for (auto [value, e, what] :
       {std::tuple(&v.weights, &states.weights, "weights"),
        std::tuple(&v.gradients, &states.gradients, "gradients"),
        std::tuple(&v.masterWeights, &states.masterWeights, "master weights"),
        std::tuple(&v.optimizerMoments, &states.optimizerMoments,
                   "optimizer moments"),
        std::tuple(&v.modelStates, &states.modelStates, "model states"),
        std::tuple(&v.parameters, &states.parameters, "parameters")}) {
    FailureOr<sym::Rational> r = bound(fn, *e, b, what);
    if (failed(r))
      return failure();
    *value = *r;
  }
  evaluated.emplace_back(std::move(twins), v);
  return v;
}

/// The peaks of a stage from its order's moments (StageMoments), in `Num`:
/// Bytes when every size is a whole number of bytes (false, with `m`
/// unchanged, otherwise or past 2^63), else rationals.
template <typename Num>
static bool peakOverMoments(const StageMoments &stage, const RankClass &cls,
                            const sym::Rational &statesBytes,
                            ArrayRef<sym::Rational> kept, StageMemory &m) {
  ChunkSizes<Num> sizes;
  Num states, peakActivations, peak;
  if (!whole(statesBytes, states) ||
      !whole(m.peakActivations, peakActivations) || !whole(m.peak, peak) ||
      !sizes.read(m, kept))
    return false;
  // The class's chunk (its memory) at each position of the moments.
  SmallVector<size_t> chunkAt;
  for (int64_t c : stage.chunks)
    chunkAt.push_back(llvm::find(cls.chunkIds, c) - cls.chunkIds.begin());
  auto live = [&](const StageMoment &at) {
    ArrayRef<int64_t> whole = stage.whole(at),
                      awaiting = stage.awaitingWeights(at);
    Num bytes(0);
    for (auto [position, ci] : llvm::enumerate(chunkAt))
      bytes = bytes + sizes.perMicrobatch[ci] * Num(whole[position]) +
              sizes.forWeights[ci] * Num(awaiting[position]);
    return bytes;
  };
  // The moments come in the order's: the first of the largest value wins,
  // and only if larger than what is there already.
  const StageMoment *peakActivationsAt = nullptr;
  for (const StageMoment &at : stage.kept) {
    Num bytes = live(at);
    if (peakActivations < bytes) {
      peakActivations = bytes;
      peakActivationsAt = &at;
    }
  }
  const StageMoment *peakAt = nullptr;
  for (const StageMoment &at : stage.running) {
    size_t ci = chunkAt[at.position];
    Num now = states + live(at) +
              (at.step.isForward() ? sizes.fwd[ci] : sizes.bwd[ci]);
    if (peak < now) {
      peak = now;
      peakAt = &at;
    }
  }
  if (!fits(peakActivations) || !fits(peak))
    return false;
  if (peakActivationsAt) {
    m.peakActivations = rational(peakActivations);
    int64_t inFlight = 0;
    for (auto [wholeCount, awaitingCount] :
         llvm::zip(stage.whole(*peakActivationsAt),
                   stage.awaitingWeights(*peakActivationsAt)))
      inFlight += wholeCount + awaitingCount;
    m.peakInFlight = inFlight;
  }
  if (peakAt) {
    m.peak = rational(peak);
    m.peakAt = describeStep(peakAt->step, cls);
  }
  return true;
}

/// One function: each stage's states, kept activations, transients and
/// peak are read in one walk of its chunks, in the schedule's order.
FailureOr<std::vector<StageMemory>>
mlir::stage::analyzeMemory(func::FuncOp fn, const sym::Bindings &b,
                           const DeviceModel &d) {
  std::shared_ptr<const StepStructure> structure = getStepStructure(fn);
  const StepStructure &step = *structure;
  // The schedule, its orders and their moments, once needed.
  std::optional<ScheduleShape> shape;
  std::shared_ptr<const StageOrders> orders;
  std::shared_ptr<const std::vector<StageMoments>> moments;
  std::vector<StageMemory> out;
  out.reserve(step.classes.size());
  WorkingSet ws(b);
  // The states' values by the classes' chunks' twins (getTwinChunk): twin
  // chunks hold the same states.
  std::vector<std::pair<SmallVector<Operation *, 2>, StageMemory::Values>>
      evaluatedStates;
  for (const RankClass &cls : step.classes) {
    StageMemory m;
    m.stage = cls.stage;
    static const char statesTag = 0;
    std::shared_ptr<const ClassStates> states = memoizeDerived<ClassStates>(
        &statesTag, cls.chunks.front(), [&] { return ClassStates(cls); });
    m.exprs = states;
    SmallVector<sym::Rational> kept;
    for (auto [chunk, keptPerMicrobatch] :
         llvm::zip(cls.chunks, states->keptPerMicrobatch)) {
      if (ServeOp serve = getServe(chunk)) {
        if (failed(analyzeServing(serve, b, ws, m)))
          return failure();
        m.chunks.push_back(ChunkMemory());
        kept.push_back(sym::Rational(0));
        continue;
      }
      // Twins (getTwinChunk) have the same numbers.
      static const char tag = 0;
      bool split = splitsBackward(step.kind);
      FailureOr<ChunkNumbers> numbers = memoizeEvaluated<ChunkNumbers>(
          &tag, getTwinChunk(chunk), split ? "split" : "whole", b,
          [&] { return chunkNumbers(chunk, keptPerMicrobatch, split, b, ws); });
      if (failed(numbers))
        return failure();
      m.chunks.push_back(numbers->memory);
      kept.push_back(numbers->kept);
    }
    // The optimizer phase: what runs after the micro-batch loops.
    for (Operation *chunk : cls.chunks) {
      MicrobatchesOp mb = getMicrobatches(chunk);
      if (!mb)
        continue;
      static const char tag = 0;
      FailureOr<sym::Rational> t = memoizeEvaluated<sym::Rational>(
          &tag, getTwinChunk(chunk), "", b, [&]() -> FailureOr<sym::Rational> {
            llvm::DenseSet<Value> excluded;
            for (Value g : mb.getResults())
              excluded.insert(g);
            return ws.peak(chunk->getRegion(0).front(), excluded);
          });
      if (failed(t))
        return failure();
      if (m.optimizerTransient < *t)
        m.optimizerTransient = *t;
    }

    if (step.serving) {
      out.push_back(std::move(m));
      continue;
    }
    FailureOr<StageMemory::Values> values =
        evaluateStates(fn, cls, *states, b, evaluatedStates);
    if (failed(values))
      return failure();
    m.values = *values;
    const sym::Rational &statesBytes = m.values.modelStates;
    m.peak = statesBytes + m.optimizerTransient;
    m.peakAt = "optimizer step";
    // The stage's schedule: activations live from a micro-batch's forward
    // to the end of its backward (its weight gradients, when the schedule
    // runs them apart: they read the layers' inputs). Its moments hold
    // what a walk of every step finds (deep pipelines run hundreds of
    // thousands).
    if (!shape) {
      FailureOr<ScheduleShape> planned = getScheduleShape(fn, step, b, d);
      if (failed(planned))
        return failure();
      shape = std::move(*planned);
    }
    bool anyLoop = llvm::any_of(cls.chunks, [](Operation *c) {
      return bool(getMicrobatches(c));
    });
    if (!anyLoop) {
      for (const ChunkMemory &cm : m.chunks)
        if (m.peak < statesBytes + cm.forwardTransient) {
          m.peak = statesBytes + cm.forwardTransient;
          m.peakAt = "forward";
        }
    } else {
      // Orders planned from this plan's step times serve it alone: walked.
      bool walked = false;
      if (orderDependsOnWeights(*shape)) {
        if (!orders)
          orders = getStageSchedules(*shape);
        walked = walkOrder((*orders)[cls.stage], cls, statesBytes, kept, m);
      }
      if (!walked) {
        if (!moments)
          moments = getScheduleMoments(*shape);
        const StageMoments &stage = (*moments)[cls.stage];
        if (!peakOverMoments<Bytes>(stage, cls, statesBytes, kept, m))
          peakOverMoments<sym::Rational>(stage, cls, statesBytes, kept, m);
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}
