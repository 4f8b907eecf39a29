//===- ReportSections.cpp - Building the sections of a report -------------===//

#include "ReportSections.h"

#include "Stage/Analysis/StepTimes.h"

#include "llvm/ADT/StringExtras.h"

#include <array>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

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

FailureOr<PhaseTimes>
mlir::stage::report::phaseTimes(Operation *chunk, const sym::Bindings &b,
                                 const DeviceModel &d) {
  PhaseTimes t;
  // The forward and backward regions' passes under ZeRO-3's prefetch.
  FsdpChain chains[2];
  double loopRuns = 1;
  // An op's roofline time over all its executions: exact unless a decode
  // step's op turns from compute- to memory-bound as its context grows.
  if (failed(walkRooflineSeconds(chunk, b, d, [&](Operation *op, double sec) {
        Phase phase = getPhase(op);
        bool comm = isa<CollectiveOpInterface>(op);
        (comm ? t.comm : t.compute)[unsigned(phase)] += sec;
        auto loop = op->getParentOfType<MicrobatchesOp>();
        bool gather = comm && isParameterGather(op);
        bool scatter = comm && !gather && isGradientScatter(op);
        if (loop && (gather || scatter))
          t.zero3[unsigned(phase)] += sec;
        if (!loop && comm && op->getParentOp() == chunk &&
            isa<AllReduceOp, ReduceScatterOp>(op))
          t.reductions += sec;
        if (!loop || (phase != Phase::Forward && phase != Phase::Backward &&
                      phase != Phase::Recompute))
          return;
        // One execution: the op's seconds over its micro-batches and
        // layer stack iterations.
        if (sym::Result<int64_t> n = loop.getCount().getValue().evaluate(b))
          loopRuns = double(std::max<int64_t>(*n, 1));
        auto stack = op->getParentOfType<RepeatOp>();
        int64_t iterations = 1;
        if (stack && stack->isProperAncestor(loop))
          stack = nullptr;
        if (stack)
          if (sym::Result<int64_t> n = stack.getCount().getValue().evaluate(b))
            iterations = std::max<int64_t>(*n, 1);
        double once = sec / loopRuns / double(iterations);
        chains[phase == Phase::Forward ? 0 : 1].items.push_back(
            {gather    ? FsdpChain::Gather
             : scatter ? FsdpChain::Scatter
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

