//===- CostAnalysis.h - Symbolic cost of a program --------------*- C++ -*-===//

#ifndef STAGE_ANALYSIS_COSTANALYSIS_H
#define STAGE_ANALYSIS_COSTANALYSIS_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "Stage/Support/NumericExpr.h"

#include <functional>
#include <memory>
#include <tuple>
#include <unordered_map>

namespace mlir::stage {

/// How many times an op runs per execution of a root: the counts of the
/// enclosing repeats and micro-batch loops multiply; a decode step loop
/// (`stage.repeat N step "i"`) sums its body's per-step quantities over
/// i = 0 .. N-1, since a step's context grows with i.
class Multiplicity {
public:
  /// The total over every execution of a quantity given per execution.
  sym::Expr of(const sym::Expr &perRun) const;
  Cost of(const Cost &perRun) const;
  /// The number of executions.
  sym::Expr count() const;
  /// Its value under `b`, level by level (without building the product).
  sym::Result<double> countUnder(const sym::Bindings &b) const;
  /// No level sums over a step: the total is the count times the quantity.
  bool isProduct() const {
    return llvm::all_of(levels, [](const auto &l) { return l.second.empty(); });
  }
  /// One level deeper: `n` times, stepping `step` when not empty.
  Multiplicity nested(const sym::Expr &n, StringRef step = "") const;

private:
  /// Outermost first.
  SmallVector<std::pair<sym::Expr, std::string>> levels;
};

/// Calls `fn(op, m)` for every op nested under `root` with how many times it
/// runs per execution of `root`.
void walkWithCounts(Operation *root,
                    llvm::function_ref<void(Operation *, const Multiplicity &)> fn);

/// The total cost of everything under `root`, repeats multiplied out.
Cost getTotalCost(Operation *root);

/// The part of a training iteration an op belongs to.
enum class Phase { Forward, Backward, Recompute, Optimizer, Prefill, Decode };
constexpr unsigned kNumPhases = 6;
/// The phases of a training iteration, and of a serving run.
constexpr Phase kTrainingPhases[] = {Phase::Forward, Phase::Backward,
                                     Phase::Recompute, Phase::Optimizer};
constexpr Phase kServingPhases[] = {Phase::Prefill, Phase::Decode};
const char *getPhaseName(Phase p);

/// Forward ops are those of a micro-batch's forward region (or of a graph
/// without one), backward those of its backward region, recompute those
/// marked `stage.recompute`, optimizer the optimizer steps; prefill and
/// decode those of a `stage.serve` op's regions.
Phase getPhase(Operation *op);

struct PhaseCosts {
  Cost phases[kNumPhases];
  /// The part of the backward phase that flash-attention backward kernels
  /// spend recomputing the score matrix (the recompute phase holds only
  /// what the recomputation policy re-runs).
  sym::Expr attentionKernelRecomputeFlops;
  Cost &of(Phase p) { return phases[unsigned(p)]; }
  const Cost &of(Phase p) const { return phases[unsigned(p)]; }
};

/// Costs per phase; the score recomputation inside flash-attention backward
/// kernels stays in the backward, and is also counted on its own.
PhaseCosts getPhaseCosts(Operation *root);

/// While one is alive on a thread, what the analyses derive from the IR
/// alone (an op's cost, a collective's sent bytes, a root's phase costs) is
/// derived once per op and reused: for evaluating one unchanging program
/// under many bindings, as a plan search evaluates each compiled step for
/// thousands of plans. The IR must not change while it lives.
class SymbolicCache {
public:
  SymbolicCache();
  ~SymbolicCache();
  SymbolicCache(const SymbolicCache &) = delete;
  SymbolicCache &operator=(const SymbolicCache &) = delete;
  /// The innermost cache alive on this thread, or none.
  static SymbolicCache *active();

  llvm::DenseMap<Operation *, Cost> costs;
  llvm::DenseMap<Operation *, sym::Expr> sentBytes;
  llvm::DenseMap<Operation *, PhaseCosts> phaseCosts;
  /// What other analyses derive from an op or block once, by their tag;
  /// and from plain values, by a key naming the analysis and the values.
  llvm::DenseMap<std::pair<const void *, const void *>, std::shared_ptr<void>>
      derived;
  std::unordered_map<std::string, std::shared_ptr<void>> derivedByKey;
  /// What analyses evaluate under some bindings, by their tag, the IR
  /// object and a variant (a device): the last bindings and their value.
  struct Evaluated {
    std::string variant;
    /// Kept under the bindings of the Evaluation numbered `evaluation`, or
    /// (0) under `bindings`.
    uint64_t evaluation = 0;
    sym::Bindings bindings;
    std::shared_ptr<void> value;
  };
  llvm::DenseMap<std::pair<const void *, const void *>,
                 SmallVector<Evaluated, 1>>
      evaluated;
  /// The symbols of the expressions compiled while the cache lives.
  sym::SymbolSlots slots;

  /// While alive, names the bindings one report is built under with a
  /// number of its own: what memoizeEvaluated keeps under them is found
  /// again by that number instead of comparing and copying the bindings (a
  /// search's plan asks for hundreds of numbers under one set). The
  /// bindings must not change while it lives.
  class Evaluation {
  public:
    explicit Evaluation(const sym::Bindings &b);
    ~Evaluation();
    Evaluation(const Evaluation &) = delete;
    Evaluation &operator=(const Evaluation &) = delete;

  private:
    SymbolicCache *cache;
    const sym::Bindings *previousBindings = nullptr;
    uint64_t previousNumber = 0;
  };
  /// The innermost live Evaluation's bindings and number (none: 0).
  const sym::Bindings *evaluating = nullptr;
  uint64_t evaluation = 0;

private:
  SymbolicCache *previous;
  uint64_t evaluations = 0;
};

/// `compute()`, kept in `cache` under `key` when a SymbolicCache is alive
/// (`cache` is one of its maps), computed afresh otherwise.
template <typename T, typename Compute>
T memoizeSymbolic(llvm::DenseMap<Operation *, T> SymbolicCache::*cache,
                  Operation *key, Compute compute) {
  SymbolicCache *active = SymbolicCache::active();
  if (!active)
    return compute();
  auto &map = active->*cache;
  auto it = map.find(key);
  if (it == map.end())
    it = map.try_emplace(key, compute()).first;
  return it->second;
}

/// What `compute()` derives from the IR object `from` (an op or a block)
/// for the analysis `tag` (the address of a static object naming it), kept
/// while the active SymbolicCache lives and computed afresh without one.
template <typename T, typename Compute>
std::shared_ptr<const T> memoizeDerived(const void *tag, const void *from,
                                        Compute compute) {
  SymbolicCache *active = SymbolicCache::active();
  if (!active)
    return std::make_shared<const T>(compute());
  auto it = active->derived.find({tag, from});
  if (it != active->derived.end())
    return std::static_pointer_cast<const T>(it->second);
  // Computed before the map is touched: compute() may derive more (a
  // reference into the map would not survive its growth).
  std::shared_ptr<void> value = std::make_shared<T>(compute());
  return std::static_pointer_cast<const T>(
      active->derived.try_emplace({tag, from}, std::move(value)).first->second);
}

/// The same for what is derived from values alone: `key` names the
/// analysis and every value `compute()` reads.
template <typename T, typename Compute>
std::shared_ptr<const T> memoizeByKey(const std::string &key, Compute compute) {
  SymbolicCache *active = SymbolicCache::active();
  if (!active)
    return std::make_shared<const T>(compute());
  std::shared_ptr<void> &slot = active->derivedByKey[key];
  if (!slot)
    slot = std::make_shared<T>(compute());
  return std::static_pointer_cast<const T>(slot);
}

/// What `compute()` (a FailureOr<T>) evaluates for the IR object `from`
/// under `b` for the analysis `tag`, in `variant` (what else it reads, such
/// as a device): kept while the active SymbolicCache lives until `from` is
/// asked for under other bindings, so that an analysis asking again for
/// the same plan, or asking for a twin (getTwinChunk), evaluates once.
/// Failures are not kept (the next call reports them again).
template <typename T, typename Compute>
FailureOr<T> memoizeEvaluated(const void *tag, const void *from,
                              StringRef variant, const sym::Bindings &b,
                              Compute compute) {
  SymbolicCache *active = SymbolicCache::active();
  if (!active)
    return compute();
  auto find = [&] {
    SmallVector<SymbolicCache::Evaluated, 1> &kept =
        active->evaluated[{tag, from}];
    return std::make_pair(
        &kept, llvm::find_if(kept, [&](const SymbolicCache::Evaluated &e) {
          return e.variant == variant;
        }));
  };
  bool underEvaluation = &b == active->evaluating;
  auto [kept, it] = find();
  if (it != kept->end() &&
      (it->evaluation ? underEvaluation && it->evaluation == active->evaluation
                      : it->bindings == b))
    return *std::static_pointer_cast<const T>(it->value);
  FailureOr<T> value = compute();
  if (failed(value))
    return failure();
  // Looked up again: compute() may have evaluated more.
  std::tie(kept, it) = find();
  if (it == kept->end())
    it = kept->insert(kept->end(), {variant.str(), 0, {}, nullptr});
  it->evaluation = underEvaluation ? active->evaluation : 0;
  if (underEvaluation)
    it->bindings.clear();
  else
    it->bindings = b;
  it->value = std::make_shared<T>(*value);
  return value;
}

/// `op.getCost()`, from the active SymbolicCache when there is one.
Cost getOpCost(CostOpInterface op);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_COSTANALYSIS_H
