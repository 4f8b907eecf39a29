//===- PlannerFactors.cpp - Which factor each grid axis splits ------------===//
//
// An op with a sharding rule is planned in three steps: the layouts it
// starts from (gatherLayouts), a factor of its index space for every grid
// axis, the one whose resharding moves the fewest bytes (chooseFactor and
// reshardCost), and the shardings it then needs and produces
// (writeAnnotations).
//
//===----------------------------------------------------------------------===//

#include "Planner.h"

#include "Stage/Analysis/ParameterAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

using namespace mlir;
using namespace mlir::stage;

/// How much more moving a weight costs than moving as many activation bytes:
/// weights are stationary, a plan moves activations to them (Megatron's
/// tensor parallelism), never weights to activations.
static constexpr double kWeightMovePenalty = 1e6;

/// Costs closer than this are equal (they are sums of byte counts).
static constexpr double kCostTolerance = 1e-9;

/// The axes over which a partial sum `v` can wait: every one when every use
/// adds it to something. In a backward, tp also when it reaches a weight
/// gradient: every use adds it or contracts it with a value that is not a
/// partial sum (an einsum is linear in each operand) into a weight
/// gradient, which keeps it for the iteration's reduction, or into a value
/// that can wait over tp in turn, when it has no dimension tp could split.
/// A low-rank adapter's gradient (a partial sum over the ranks' heads, of
/// Ra channels) so joins the projection's input gradient, reduced once, and
/// its down projection's weight gradient is reduced once per iteration.
SmallVector<std::string> Planner::sumsLater(Value v, int depth) {
  const SmallVector<std::string> &all = rules.getPlan().axes;
  auto isAdd = [](Operation *user) {
    auto add = dyn_cast<EwiseOp>(user);
    return add && add.getKind() == EwiseKind::add;
  };
  if (v.use_empty())
    return {};
  if (llvm::all_of(v.getUsers(), isAdd))
    return all;
  // A recomputed forward value is reduced as the forward reduced it; a
  // value with heads (replicated kv heads' gradients) as Megatron-LM
  // reduces it. The low-rank bottleneck has none.
  Operation *def = v.getDefiningOp();
  if (degree("tp") < 2 || depth > 1 || (def && isRecomputation(def)))
    return {};
  for (Role r : rules.getRoles(cast<SymTensorType>(v.getType())))
    if (r != Role::None && r != Role::Batch && r != Role::Seq &&
        r != Role::Tokens)
      return {};
  bool reachesWeight = false;
  bool waits = llvm::all_of(v.getUsers(), [&](Operation *user) {
    if (isAdd(user))
      return true;
    auto einsum = dyn_cast<EinsumOp>(user);
    if (!einsum || einsum.getInputs().size() != 2)
      return false;
    Value other = einsum.getInputs()[einsum.getInputs()[0] == v ? 1 : 0];
    if (other == v || !current(other).getPartialAxes().empty())
      return false;
    Value r = einsum.getResult();
    if (gradients.contains(r)) {
      reachesWeight = true;
      return true;
    }
    return llvm::is_contained(sumsLater(r, depth + 1), "tp");
  });
  if (waits && reachesWeight)
    return {"tp"};
  return {};
}

/// The factor of the dimension `axis` splits in layout `l`, or -1.
static int factorOf(const ShardingLayout &l, ArrayRef<int> factors,
                    StringRef axis) {
  int d = l.dimOf(axis);
  return d < 0 ? -1 : factors[d];
}

OpLayouts Planner::gatherLayouts(Operation *op, const FactorModel &m) {
  OpLayouts l;
  for (Value v : op->getOperands()) {
    // FSDP (ZeRO-3): a weight is gathered whole before each use; the op
    // plans with the weight's own sharding.
    bool weight = bool(getSourceParam(v));
    l.isWeight.push_back(weight);
    ShardingAttr s = weight && rules.getPlan().zeroStage >= 3
                         ? rules.getDesired(cast<SymTensorType>(v.getType()))
                         : current(v);
    l.operands.push_back(
        ShardingLayout::of(s, m.operands[l.operands.size()].size()));
  }
  for (Value r : op->getResults()) {
    l.results.push_back(ShardingLayout::of(keptSharding(r),
                                           m.results[l.results.size()].size()));
    if (SmallVector<std::string> waits = sumsLater(r); !waits.empty())
      l.results.back().partial = waits;
  }
  // Partial sums pass through linear ops when every operand is partial over
  // the same axes (a sum of partial sums is one); extra axes of one operand
  // are resolved first.
  unsigned n = op->getNumOperands();
  if (!m.linear || !n)
    return l;
  l.passPartial = l.operands[0].partial;
  for (unsigned i = 1; i < n; ++i)
    llvm::erase_if(l.passPartial, [&](const std::string &a) {
      return !l.operands[i].isPartial(a);
    });
  if (n == 2 && isa<EinsumOp>(op)) {
    // An einsum is linear in each operand: one partial operand is enough.
    const ShardingLayout &a = l.operands[0], &b = l.operands[1];
    l.passPartial = a.partial.empty() ? b.partial : a.partial;
    if (!a.partial.empty() && !b.partial.empty())
      l.passPartial.clear();
  }
  return l;
}

/// The bytes a rank holds of `v` in layout `l`.
static double localBytes(double bytes, const ShardingLayout &l,
                         function_ref<int64_t(StringRef)> degree) {
  for (const AxisList &axes : l.dims)
    for (const std::string &a : axes)
      bytes /= double(degree(a));
  return bytes;
}

/// Ring algorithms over n ranks, for a value of which a rank holds `b`
/// bytes: an all-gather moves (n - 1) b, an all-to-all or a reduce-scatter
/// of a rank's share (n - 1)/n b, an all-reduce 2 (n - 1)/n b. Operands
/// split along another factor than `f` are moved (all-to-all when `f`
/// splits them too, else gathered; a gather another consumer of the value
/// in this block already pays is free), pending partial sums are
/// all-reduced; results that `f` leaves partial are reduced (scattered
/// when they keep the axis), results split otherwise than they keep are
/// moved. Weights, and weight gradients reduced over an axis that splits
/// the weight, cost kWeightMovePenalty times their bytes.
double Planner::reshardCost(Operation *op, const FactorModel &m,
                            const OpLayouts &l, StringRef axis, int f) {
  int64_t n = degree(axis);
  double g = double(n - 1) / double(n);
  auto deg = [&](StringRef a) { return degree(a); };
  double cost = 0;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    const ShardingLayout &cur = l.operands[i];
    int has = factorOf(cur, m.operands[i], axis);
    bool present = f >= 0 && llvm::is_contained(m.operands[i], f);
    std::tuple<void *, std::string, Block *> key{
        op->getOperand(i).getAsOpaquePointer(), axis.str(), op->getBlock()};
    bool shared = gathered.count(key) || paid.count(key);
    double held = localBytes(bytes(op->getOperand(i)), cur, deg);
    if (l.isWeight[i])
      held *= kWeightMovePenalty;
    if (has >= 0 && has != f && !(shared && !present))
      cost += held * (present ? g : double(n - 1)); // all-to-all / gather
    if (cur.isPartial(axis))
      cost += 2 * held * g;
  }
  for (unsigned j = 0; j < op->getNumResults(); ++j) {
    Value r = op->getResult(j);
    const ShardingLayout &want = l.results[j];
    int keep = factorOf(want, m.results[j], axis);
    bool present = f >= 0 && llvm::is_contained(m.results[j], f);
    bool summed = f >= 0 && !present && m.summable.test(f);
    double b = localBytes(bytes(r), want, deg);
    // Each rank computes its own shard of a weight gradient whole: no
    // reduction over an axis that splits the weight (ZeRO's partitions of
    // the gradient over the data axes are reduce-scatters, as meant).
    if (summed && keep >= 0 && gradients.contains(r)) {
      auto t = cast<SymTensorType>(r.getType());
      if (ShardingLayout::of(gradients.lookup(r), t.getRank()).dimOf(axis) >= 0)
        b *= kWeightMovePenalty;
    }
    if (summed) {
      if (!want.isPartial(axis)) // reduce-scatter / all-reduce
        cost += keep >= 0 ? b * double(n - 1) : 2 * b * g;
    } else if (present && keep != f) {
      cost += keep >= 0 ? b * g : b * double(n - 1); // all-to-all / gather
    }
  }
  return cost;
}

int Planner::chooseFactor(Operation *op, const FactorModel &m,
                          const OpLayouts &l, StringRef axis) {
  unsigned nOperands = op->getNumOperands(), nResults = op->getNumResults();
  SmallVector<int> candidates{-1};
  for (unsigned i = 0; i < nOperands; ++i)
    if (int f = factorOf(l.operands[i], m.operands[i], axis); f >= 0)
      candidates.push_back(f);
  for (unsigned j = 0; j < nResults; ++j)
    if (int f = factorOf(l.results[j], m.results[j], axis); f >= 0)
      candidates.push_back(f);
  // A weight gradient is a partial sum over its data-parallel axes: each
  // rank computes it from its own tokens, and the sum is reduced (ZeRO-2
  // reduce-scatters it into the rank's shard). Such an axis stays on the
  // tokens: it neither splits the gradient (which would move activations
  // to the shards) nor leaves (which would gather every rank's tokens).
  bool gradientOverData = false;
  for (Value r : op->getResults())
    gradientOverData |=
        gradients.contains(r) &&
        llvm::is_contained(rules.getDataAxes(gradients.lookup(r)), axis);
  auto sumsTokens = [&](int f) {
    if (f < 0 || m.frozen.test(f) || !m.summable.test(f))
      return false;
    return llvm::none_of(m.results, [&](ArrayRef<int> res) {
      return llvm::is_contained(res, f);
    });
  };
  if (gradientOverData && llvm::any_of(candidates, sumsTokens))
    llvm::erase_if(candidates, [&](int f) { return !sumsTokens(f); });
  for (unsigned i = 0; i < nOperands; ++i)
    if (int f = factorOf(l.operands[i], m.operands[i], axis);
        f >= 0 && m.keepSplit.test(f))
      candidates.assign({f});

  // Ties: the layout the results keep, then that of the largest operand,
  // then the first candidate.
  auto preference = [&](int factor) {
    double w = 0;
    if (factor < 0)
      return w;
    for (unsigned j = 0; j < nResults; ++j)
      if (factorOf(l.results[j], m.results[j], axis) == factor)
        return std::numeric_limits<double>::infinity();
    for (unsigned i = 0; i < nOperands; ++i)
      if (factorOf(l.operands[i], m.operands[i], axis) == factor)
        w = std::max(w, bytes(op->getOperand(i)));
    return w;
  };
  std::optional<int> best;
  double bestCost = 0;
  for (int f : candidates) {
    if (f >= 0 && m.frozen.test(f))
      continue;
    double cost = reshardCost(op, m, l, axis, f);
    if (!best || cost < bestCost - kCostTolerance ||
        (std::abs(cost - bestCost) <= kCostTolerance && f != *best &&
         preference(f) > preference(*best))) {
      best = f;
      bestCost = cost;
    }
  }
  return best.value_or(-1);
}

void Planner::writeAnnotations(Operation *op, const FactorModel &m,
                               const OpLayouts &l,
                               const std::map<std::string, int> &choice) {
  auto axesOf = [&](int factor) {
    AxisList axes;
    if (factor < 0)
      return axes;
    for (const std::string &a : rules.getPlan().axes)
      if (auto it = choice.find(a); it != choice.end() && it->second == factor)
        axes.push_back(a);
    return axes;
  };
  SmallVector<ShardingAttr> needs, natural, kept;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    ShardingLayout need;
    for (int f : m.operands[i])
      need.dims.push_back(axesOf(f));
    // Only an operand that is a partial sum passes it through (the other
    // operand of an einsum is whole).
    if (!l.operands[i].partial.empty())
      need.partial = l.passPartial;
    needs.push_back(need.attr(ctx));
    for (const std::string &a : rules.getPlan().axes) {
      if (l.operands[i].dimOf(a) >= 0 && need.dimOf(a) < 0)
        gathered.insert(
            {op->getOperand(i).getAsOpaquePointer(), a, op->getBlock()});
    }
    recordMove(op->getOperand(i), op->getBlock(), needs.back());
  }
  for (unsigned j = 0; j < op->getNumResults(); ++j) {
    ShardingLayout produced;
    for (int f : m.results[j])
      produced.dims.push_back(axesOf(f));
    produced.partial = l.passPartial;
    for (const std::string &a : rules.getPlan().axes) {
      auto it = choice.find(a);
      if (it == choice.end() || it->second < 0)
        continue;
      bool present = llvm::is_contained(m.results[j], it->second);
      if (!present && m.summable.test(it->second))
        produced.partial.push_back(a);
    }
    natural.push_back(produced.attr(ctx));
    Value r = op->getResult(j);
    kept.push_back(gradients.contains(r)
                       ? weightGradSharding(r, produced.partial)
                       : keptSharding(r));
    // Partial sums that are only added up stay partial: the sum is resolved
    // once (the gradients of the q, k and v projections, as one fused
    // projection would). A value nobody reads, or only the loss marker, is
    // not resharded, unless it is the program's output.
    bool onlyLoss =
        !isProgramOutput(op) &&
        llvm::all_of(r.getUsers(), [](Operation *u) { return isa<LossOp>(u); });
    SmallVector<std::string> waits = sumsLater(r);
    bool produceWaits =
        !produced.partial.empty() &&
        llvm::all_of(produced.partial, [&](const std::string &a) {
          return llvm::is_contained(waits, a);
        });
    if (onlyLoss || produceWaits) {
      kept.back() = natural.back();
      continue;
    }
    // A partial sum the result may keep stays one.
    if (!produced.partial.empty()) {
      ShardingLayout k = ShardingLayout::of(kept.back(), produced.dims.size());
      bool keepsPartial =
          llvm::all_of(produced.partial,
                       [&](const std::string &a) { return k.isPartial(a); });
      if (keepsPartial && k.dims == produced.dims)
        kept.back() = natural.back();
    }
  }
  setOperandShardings(op, needs);
  setResultShardings(op, kept);
  setNaturalShardings(op, natural, kept);
}

LogicalResult Planner::planWithModel(Operation *op, const FactorModel &m) {
  OpLayouts layouts = gatherLayouts(op, m);
  std::map<std::string, int> choice; // axis -> factor (-1: none)
  for (const std::string &axis : rules.getPlan().axes)
    if (degree(axis) > 1 && !llvm::is_contained(layouts.passPartial, axis))
      choice[axis] = chooseFactor(op, m, layouts, axis);
  writeAnnotations(op, m, layouts, choice);
  return success();
}
