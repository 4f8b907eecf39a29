//===- MemoryAnalysis.cpp - Memory of a rank over one iteration -----------===//

#include "Stage/Analysis/MemoryAnalysis.h"

#include "Stage/Analysis/BackwardSplit.h"
#include "Stage/Analysis/StepTimes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>

using namespace mlir;
using namespace mlir::stage;

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
                                const llvm::DenseSet<Value> &excluded);

private:
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

FailureOr<sym::Rational>
WorkingSet::peak(Block &block, const llvm::DenseSet<Value> &excluded) {
  // Position of each op, and where each value defined here is last read.
  llvm::DenseMap<Operation *, unsigned> index;
  for (auto [i, op] : llvm::enumerate(block))
    index[&op] = unsigned(i);
  auto positionOf = [&](Operation *user) {
    Operation *a = block.findAncestorOpInBlock(*user);
    return a ? index[a] : ~0u;
  };
  llvm::DenseMap<Value, unsigned> lastUse;
  std::vector<std::vector<Value>> dying(index.size());
  for (Operation &op : block)
    for (Value r : op.getResults()) {
      if (excluded.contains(r) || isa<ParamOp>(op) || isView(&op) ||
          !isa<SymTensorType>(r.getType()))
        continue;
      unsigned last = index[&op];
      for (Operation *user : r.getUsers())
        last = std::max(last, positionOf(user) == ~0u ? last : positionOf(user));
      dying[last].push_back(r);
    }
  sym::Rational live(0), best(0);
  for (auto [i, op] : llvm::enumerate(block)) {
    sym::Rational results(0);
    for (Value r : op.getResults()) {
      if (excluded.contains(r) || isa<ParamOp>(op) || isView(&op) ||
          !isa<SymTensorType>(r.getType()))
        continue;
      FailureOr<sym::Rational> s = size(r);
      if (failed(s))
        return failure();
      results = results + *s;
    }
    // A layer stack's body: its own working set, per iteration; what it
    // stacks for the backward is kept, what it carries is live here.
    sym::Rational inner(0);
    if (auto rep = dyn_cast<RepeatOp>(&op)) {
      Block &body = rep.getBodyBlock();
      llvm::DenseSet<Value> bodyExcluded;
      Operation *yield = body.getTerminator();
      for (Value v : yield->getOperands().drop_front(rep.getNumCarried()))
        bodyExcluded.insert(v);
      FailureOr<sym::Rational> in = peak(body, bodyExcluded);
      if (failed(in))
        return failure();
      inner = *in;
    }
    sym::Rational now = live + results + inner;
    if (best < now)
      best = now;
    live = live + results;
    for (Value r : dying[i]) {
      FailureOr<sym::Rational> s = size(r);
      if (failed(s))
        return failure();
      live = live - *s;
    }
  }
  return best;
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
  FailureOr<sym::Rational> held =
      bound(serve, m.modelStates() + m.kvCache, b, "weights and KV caches");
  if (failed(held))
    return failure();
  bool decodeLarger = m.prefillTransient < m.decodeTransient;
  m.peak = *held + (decodeLarger ? m.decodeTransient : m.prefillTransient);
  m.peakAt = decodeLarger ? "the last decode step" : "prefill";
  return success();
}

} // namespace

/// What a split backward keeps between its two steps (ChunkMemory): the
/// kept values the weight gradients read, and the values of the input-
/// gradient step they read, once per layer that computes them.
static LogicalResult weightStepMemory(MicrobatchesOp mb, const sym::Bindings &b,
                                      ChunkMemory &cm) {
  BackwardSplit split(mb);
  Block &fwd = mb.getForwardBlock(), &bwd = mb.getBackwardBlock();
  sym::Expr kept;
  for (auto [v, arg] :
       llvm::zip(fwd.getTerminator()->getOperands(), bwd.getArguments()))
    if (split.readsInWeightStep(arg))
      kept += bytesOf(v);
  sym::Expr held;
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
                held += inner * bytesOf(arg);
            walk(rep.getBodyBlock(), inner);
            continue;
          }
          if (split.isWeightGrad(&op))
            continue;
          for (Value r : op.getResults())
            if (split.readsInWeightStep(r))
              held += count * bytesOf(r);
        }
      };
  walk(bwd, sym::Expr(1));
  FailureOr<sym::Rational> k = bound(mb, kept, b, "kept for weight gradients");
  FailureOr<sym::Rational> h =
      bound(mb, held, b, "gradients held for weight gradients");
  if (failed(k) || failed(h))
    return failure();
  cm.keptForWeights = *k;
  cm.heldForWeights = *h;
  return success();
}

/// One function: each stage's states, kept activations, transients and
/// peak are read in one walk of its chunks, in the schedule's order.
FailureOr<std::vector<StageMemory>>
mlir::stage::analyzeMemory(func::FuncOp fn, const sym::Bindings &b) {
  StepStructure step = getStepStructure(fn);
  std::vector<std::vector<PipelineStep>> orders; // the schedule, once needed
  std::vector<StageMemory> out;
  WorkingSet ws(b);
  for (const RankClass &cls : step.classes) {
    StageMemory m;
    m.stage = cls.stage;
    SmallVector<sym::Rational> kept;
    for (Operation *chunk : cls.chunks) {
      Block &body = chunk->getRegion(0).front();
      for (auto param : body.getOps<ParamOp>()) {
        sym::Expr bytes = bytesOf(param.getResult());
        ParamKind kind = param.getKind();
        if (kind == ParamKind::master)
          m.masterWeights += bytes;
        else if (kind == ParamKind::exp_avg || kind == ParamKind::exp_avg_sq)
          m.optimizerMoments += bytes;
        else if (kind == ParamKind::grad)
          m.gradients += bytes;
        else
          m.weights += bytes;
        if (kind == ParamKind::weight)
          m.parameters +=
              cast<SymTensorType>(param.getType()).getNumElements();
      }
      ChunkMemory cm;
      if (ServeOp serve = getServe(chunk)) {
        if (failed(analyzeServing(serve, b, ws, m)))
          return failure();
        m.chunks.push_back(cm);
        kept.push_back(sym::Rational(0));
        continue;
      }
      MicrobatchesOp mb = getMicrobatches(chunk);
      if (!mb) {
        // A forward-only program: its working set is all there is.
        FailureOr<sym::Rational> t = ws.peak(body, {});
        if (failed(t))
          return failure();
        cm.forwardTransient = *t;
        m.chunks.push_back(cm);
        kept.push_back(sym::Rational(0));
        continue;
      }
      for (Value g : mb.getResults())
        m.gradients += bytesOf(g);
      Block &fwd = mb.getForwardBlock(), &bwd = mb.getBackwardBlock();
      llvm::DenseSet<Value> fwdKept, bwdGrads;
      for (Value v : fwd.getTerminator()->getOperands()) {
        cm.keptPerMicrobatch += bytesOf(v);
        fwdKept.insert(v);
      }
      for (Value v : bwd.getTerminator()->getOperands())
        bwdGrads.insert(v);
      // Per layer: what the largest layer stack keeps, over its count.
      for (auto rep : fwd.getOps<RepeatOp>()) {
        sym::Expr stacked;
        for (Value r : rep.getResults().drop_front(rep.getNumCarried()))
          if (fwdKept.contains(r))
            stacked += bytesOf(r);
        FailureOr<sym::Rational> all = bound(mb, stacked, b, "kept per layer");
        FailureOr<sym::Rational> count =
            bound(rep, rep.getCount().getValue(), b, "layer count");
        if (failed(all) || failed(count))
          return failure();
        if (count->isZero())
          continue;
        sym::Rational perLayer = *all / *count;
        if (cm.keptPerLayer < perLayer)
          cm.keptPerLayer = perLayer;
      }
      FailureOr<sym::Rational> f = ws.peak(fwd, fwdKept);
      FailureOr<sym::Rational> bw = ws.peak(bwd, bwdGrads);
      FailureOr<sym::Rational> k =
          bound(mb, cm.keptPerMicrobatch, b, "kept activations");
      if (failed(f) || failed(bw) || failed(k))
        return failure();
      cm.forwardTransient = *f;
      cm.backwardTransient = *bw;
      if (splitsBackward(step.kind) && failed(weightStepMemory(mb, b, cm)))
        return failure();
      kept.push_back(*k);
      m.chunks.push_back(cm);
    }
    // The optimizer phase: what runs after the micro-batch loops.
    for (Operation *chunk : cls.chunks) {
      Block &body = chunk->getRegion(0).front();
      llvm::DenseSet<Value> excluded;
      if (MicrobatchesOp mb = getMicrobatches(chunk))
        for (Value g : mb.getResults())
          excluded.insert(g);
      if (!getMicrobatches(chunk))
        continue;
      FailureOr<sym::Rational> t = ws.peak(body, excluded);
      if (failed(t))
        return failure();
      if (m.optimizerTransient < *t)
        m.optimizerTransient = *t;
    }

    if (step.serving) {
      out.push_back(std::move(m));
      continue;
    }
    FailureOr<sym::Rational> states =
        bound(fn, m.modelStates(), b, "model states");
    if (failed(states))
      return failure();
    m.peak = *states + m.optimizerTransient;
    m.peakAt = "optimizer step";
    // Walk the stage's schedule: activations live from a micro-batch's
    // forward to the end of its backward (its weight gradients, when the
    // schedule runs them apart: they read the layers' inputs).
    if (orders.empty()) {
      FailureOr<ScheduleShape> shape = getScheduleShape(fn, step, b);
      if (failed(shape))
        return failure();
      orders = getStageSchedules(*shape);
    }
    sym::Rational live(0);
    int64_t inFlight = 0;
    bool anyLoop = llvm::any_of(cls.chunks, [](Operation *c) {
      return bool(getMicrobatches(c));
    });
    if (!anyLoop) {
      for (const ChunkMemory &cm : m.chunks)
        if (m.peak < *states + cm.forwardTransient) {
          m.peak = *states + cm.forwardTransient;
          m.peakAt = "forward";
        }
    } else {
      for (const PipelineStep &s : orders[cls.stage]) {
        auto ci = llvm::find(cls.chunkIds, s.chunk) - cls.chunkIds.begin();
        const ChunkMemory &cm = m.chunks[ci];
        if (s.isForward()) {
          live = live + kept[ci];
          ++inFlight;
        }
        sym::Rational now =
            *states + live +
            (s.isForward() ? cm.forwardTransient : cm.backwardTransient);
        if (m.peakActivations < live) {
          m.peakActivations = live;
          m.peakInFlight = inFlight;
        }
        if (m.peak < now) {
          m.peak = now;
          m.peakAt =
              (Twine(s.isForward()                    ? "forward"
                     : s.kind == StepKind::WeightGrad ? "weight gradients"
                     : s.kind == StepKind::InputGrad  ? "input gradient"
                                                      : "backward") +
               " of micro-batch " + Twine(s.microbatch) +
               (cls.chunks.size() > 1 ? " in chunk " + Twine(s.chunk)
                                      : Twine("")))
                  .str();
        }
        if (s.kind == StepKind::InputGrad)
          live = live - (kept[ci] - cm.keptForWeights) + cm.heldForWeights;
        // A whole backward frees all; a weight-gradient step what B left.
        if (s.kind == StepKind::WeightGrad || s.kind == StepKind::Backward) {
          live = live - (s.kind == StepKind::WeightGrad
                             ? cm.keptForWeights + cm.heldForWeights
                             : kept[ci]);
          --inFlight;
        }
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}
