//===- ReportSections.cpp - Building the sections of a report -------------===//

#include "ReportSections.h"

#include "Stage/Analysis/CommAnalysis.h"
#include "Stage/Analysis/StepTimes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <array>
#include <cmath>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

/// 2^63, the first value a signed 64-bit integer does not hold.
static constexpr double kTwoTo63 = 9223372036854775808.0;

std::optional<sym::Rational> mlir::stage::report::exactSeconds(double seconds) {
  double ns = std::round(seconds * 1e9);
  if (!std::isfinite(ns) || ns < 0 || ns >= kTwoTo63)
    return std::nullopt;
  return sym::Rational(sym::BigInt(int64_t(ns)), sym::BigInt(1000000000));
}

std::optional<sym::Rational> mlir::stage::report::roundedCount(double x) {
  double n = std::round(x);
  if (!std::isfinite(n) || n < 0 || n >= kTwoTo63)
    return std::nullopt;
  return sym::Rational(int64_t(n));
}

void SectionBuilder::addChecked(std::string key, std::string label,
                                std::string unit,
                                std::optional<sym::Rational> v, double x) {
  if (failed)
    return;
  if (!v) {
    std::string value;
    llvm::raw_string_ostream(value) << llvm::format("%g", x);
    at->emitError(label) << ": " << value << " " << unit
                         << " is not a non-negative 64-bit value (in "
                         << (unit == "s" ? "nanoseconds" : "whole units")
                         << "); a smaller binding";
    failed = true;
    return;
  }
  addValue(std::move(key), std::move(label), std::move(unit), *v);
}

std::string mlir::stage::report::layerRanges(const RankClass &c) {
  std::string s;
  for (auto [begin, end] : c.layers)
    s += (s.empty() ? "" : ", ") + std::to_string(begin) + "-" +
         std::to_string(end - 1);
  return s;
}

std::string mlir::stage::report::commLabel(const CommVolume &v) {
  std::string kind = v.kind;
  std::replace(kind.begin(), kind.end(), '_', '-');
  if (v.kind == "send" || v.kind == "recv")
    return kind + " on " + llvm::join(v.axes, ", ");
  return kind + " over " + llvm::join(v.axes, ", ");
}

std::string mlir::stage::report::commKey(const CommVolume &v) {
  return v.kind + "_" + llvm::join(v.axes, "_");
}

namespace {
/// One micro-batch's pass through a forward or backward region, as the
/// traces run ZeRO-3 (docs/Overlap.md): the weights are gathered per unit,
/// a layer stack's iteration or the weights outside the stacks; a stack
/// iteration's gathers are issued when the iteration before starts, the
/// others at once; gradients' reduce-scatters follow their unit's work.
struct FsdpChain {
  enum Kind { Work, Gather, Scatter };
  struct Item {
    Kind kind;
    double seconds;   // one execution
    Operation *stack; // the layer stack repeating it, if any
    int64_t iterations;
  };
  std::vector<Item> items;

  /// The seconds of the pass, and of its work alone.
  std::pair<double, double> run() const {
    struct Unit {
      double gather = 0, work = 0, scatter = 0;
      int64_t times = 1;
    };
    std::vector<Unit> units(1);
    for (size_t i = 0; i < items.size();) {
      const Item &first = items[i];
      if (!first.stack) {
        if (first.kind == Gather && units.back().work > 0)
          units.emplace_back();
        Unit &u = units.back();
        (first.kind == Gather ? u.gather
         : first.kind == Work ? u.work
                              : u.scatter) += first.seconds;
        ++i;
        continue;
      }
      Unit layer;
      layer.times = first.iterations;
      for (; i < items.size() && items[i].stack == first.stack; ++i)
        (items[i].kind == Gather ? layer.gather
         : items[i].kind == Work ? layer.work
                                 : layer.scatter) += items[i].seconds;
      units.push_back(layer);
      units.emplace_back();
    }
    // The gathers that wait on nothing (outside the stacks, and a stack's
    // first iteration's) are issued at once, a stack's later iterations'
    // when the iteration before starts; collectives in flight do not slow
    // one another (ASTRA-sim's congestion-unaware network).
    double t = 0, previousStart = 0, work = 0, end = 0;
    for (const Unit &u : units)
      for (int64_t k = 0; k < u.times; ++k) {
        double gathered = (k > 0 ? previousStart : 0) + u.gather;
        previousStart = std::max(t, gathered);
        t = previousStart + u.work;
        work += u.work;
        end = std::max(end, t + u.scatter);
      }
    return {end, work};
  }
};
} // namespace

namespace {
/// What phaseTimes reads of each op under a chunk, in the walk's order:
/// derived from the IR once per chunk while a SymbolicCache lives.
struct OpRoles {
  struct Role {
    Phase phase;
    bool comm, gather, scatter, reduction;
    MicrobatchesOp loop;
    /// The layer stack inside the loop that repeats the op, if any.
    RepeatOp stack;
  };
  std::vector<Role> roles;

  explicit OpRoles(Operation *chunk) {
    walkWithCounts(chunk, [&](Operation *op, const Multiplicity &) {
      Role r{getPhase(op),
             isa<CollectiveOpInterface>(op),
             false,
             false,
             false,
             op->getParentOfType<MicrobatchesOp>(),
             op->getParentOfType<RepeatOp>()};
      r.gather = r.comm && isParameterGather(op);
      r.scatter = r.comm && !r.gather && isGradientScatter(op);
      r.reduction = !r.loop && r.comm && op->getParentOp() == chunk &&
                    isa<AllReduceOp, ReduceScatterOp>(op);
      if (r.stack && r.loop && r.stack->isProperAncestor(r.loop))
        r.stack = nullptr;
      roles.push_back(r);
    });
  }
};
} // namespace

static FailureOr<PhaseTimes> computePhaseTimes(Operation *chunk,
                                               const sym::Bindings &b,
                                               const DeviceModel &d) {
  PhaseTimes t;
  // The forward and backward regions' passes under ZeRO-3's prefetch.
  FsdpChain chains[2];
  double loopRuns = 1;
  static const char tag = 0;
  std::shared_ptr<const OpRoles> roles =
      memoizeDerived<OpRoles>(&tag, chunk, [&] { return OpRoles(chunk); });
  size_t next = 0;
  // A loop's or stack's count, evaluated once per call.
  llvm::DenseMap<Operation *, int64_t> counts;
  auto countOf = [&](Operation *op, const sym::Expr &n) {
    auto [it, added] = counts.try_emplace(op, 1);
    if (added)
      if (sym::Result<int64_t> v = n.evaluate(b))
        it->second = std::max<int64_t>(*v, 1);
    return it->second;
  };
  // An op's roofline time over all its executions: exact unless a decode
  // step's op turns from compute- to memory-bound as its context grows.
  if (failed(walkRooflineSeconds(chunk, b, d, [&](Operation *op, double sec) {
        const OpRoles::Role &r = roles->roles[next++];
        Phase phase = r.phase;
        (r.comm ? t.comm : t.compute)[unsigned(phase)] += sec;
        if (r.loop && (r.gather || r.scatter))
          t.zero3[unsigned(phase)] += sec;
        if (r.reduction)
          t.reductions += sec;
        if (!r.loop || (phase != Phase::Forward && phase != Phase::Backward &&
                        phase != Phase::Recompute))
          return;
        // One execution: the op's seconds over its micro-batches and
        // layer stack iterations.
        // (Op handles are values: copies call the non-const accessors.)
        MicrobatchesOp loop = r.loop;
        RepeatOp stack = r.stack;
        loopRuns = double(countOf(loop, loop.getCount().getValue()));
        int64_t iterations =
            stack ? countOf(stack, stack.getCount().getValue()) : 1;
        double once = sec / loopRuns / double(iterations);
        chains[phase == Phase::Forward ? 0 : 1].items.push_back(
            {r.gather    ? FsdpChain::Gather
             : r.scatter ? FsdpChain::Scatter
                         : FsdpChain::Work,
             once, stack, iterations});
      })))
    return failure();
  for (auto [chain, phase] : llvm::zip(
           chains, std::array<Phase, 2>{Phase::Forward, Phase::Backward})) {
    auto [pass, work] = chain.run();
    t.zero3Exposed[unsigned(phase)] = loopRuns * std::max(0.0, pass - work);
  }
  return t;
}

FailureOr<PhaseTimes> mlir::stage::report::phaseTimes(Operation *chunk,
                                                      const sym::Bindings &b,
                                                      const DeviceModel &d) {
  static const char tag = 0;
  return memoizeEvaluated<PhaseTimes>(
      &tag, getTwinChunk(chunk), d.timingKey(), b,
      [&] { return computePhaseTimes(chunk, b, d); });
}

PhaseCosts mlir::stage::report::sumPhaseCosts(ArrayRef<Operation *> chunks) {
  PhaseCosts total;
  for (Operation *chunk : chunks) {
    PhaseCosts pc = getPhaseCosts(chunk);
    for (unsigned i = 0; i < kNumPhases; ++i)
      total.phases[i] += pc.phases[i];
    total.attentionKernelRecomputeFlops += pc.attentionKernelRecomputeFlops;
  }
  return total;
}
