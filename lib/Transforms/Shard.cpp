//===- Shard.cpp - Shardings for every value from the plan ----------------===//
//
// Values keep the sharding the rules give their type. For each op, every
// grid axis is assigned to at most one factor of the op's index space (or
// to none) so that the bytes moved are smallest: resharding operands to what
// the assignment needs, plus resharding the result it produces to the
// sharding the result keeps. Weight gradients may stay partial sums over
// the data-parallel axes; everything else is resolved right after its op.
//
//===----------------------------------------------------------------------===//

#include "Stage/Transforms/Passes.h"

#include "FactorModel.h"
#include "PlanSetup.h"
#include "ShardingRules.h"

#include "Stage/Analysis/Bindings.h"
#include "Stage/Analysis/ParameterAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <set>

namespace mlir::stage {
#define GEN_PASS_DEF_STAGESHARD
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;

namespace {

using AxisList = SmallVector<std::string>;

/// A sharding as plain vectors, for building.
struct Layout {
  SmallVector<AxisList> dims;
  AxisList partial;

  static Layout of(ShardingAttr s, unsigned rank) {
    Layout l;
    l.dims.resize(rank);
    if (!s)
      return l;
    for (unsigned d = 0; d < rank && d < s.getRank(); ++d)
      l.dims[d] = s.getDimAxes(d);
    l.partial = s.getPartialAxes();
    return l;
  }
  /// The attribute, with the axes of each dimension and the partial axes
  /// in grid order: a dimension's axes form a set, so equal sets compare
  /// equal.
  ShardingAttr attr(MLIRContext *ctx) const {
    return makeSharding(ctx, dims, partial);
  }
  /// The dimension `axis` splits, or -1.
  int dimOf(StringRef axis) const {
    for (auto [d, axes] : llvm::enumerate(dims))
      if (llvm::is_contained(axes, axis))
        return int(d);
    return -1;
  }
  bool isPartial(StringRef axis) const {
    return llvm::is_contained(partial, axis);
  }
};

class Planner {
public:
  Planner(const ShardingRules &rules, MLIRContext *ctx)
      : rules(rules), ctx(ctx) {}

  LogicalResult planBlock(Block &block);

  /// Plans again knowing every gather the previous round needed: a gather
  /// several consumers share (the input of the q, k and v projections, and
  /// of their three weight gradients) is paid once.
  void nextRound() {
    paid = std::move(gathered);
    gathered.clear();
    moved.clear();
  }

private:
  LogicalResult planOp(Operation *op);
  LogicalResult planWithModel(Operation *op, const FactorModel &m);
  LogicalResult planRepeat(RepeatOp op);
  LogicalResult planMicrobatches(MicrobatchesOp op);
  LogicalResult planOptimizer(OptimizerStepOp op);
  void planDispatchLike(Operation *op);

  /// The sharding a value keeps: the rules', or for weight gradients the
  /// weight's with the data-parallel axes pending (ZeRO >= 2: partitioned).
  ShardingAttr keptSharding(Value v);
  ShardingAttr current(Value v) {
    if (ShardingAttr s = getSharding(v))
      return s;
    return rules.getDesired(cast<SymTensorType>(v.getType()));
  }
  /// The sharding a frontend's plan gives `v`, if any.
  static ShardingAttr planSharding(Value v) {
    Operation *def = v.getDefiningOp();
    return def ? getPlanSharding(def) : ShardingAttr();
  }
  /// A weight's sharding: the frontend plan's, else the rules'.
  ShardingAttr weightSharding(Value weight) {
    if (ShardingAttr s = planSharding(weight))
      return s;
    return rules.getDesired(cast<SymTensorType>(weight.getType()));
  }
  ShardingAttr weightGradSharding(Value grad, ArrayRef<std::string> partial);
  /// How a value the backward keeps is stored: as it is, or (keep-gathered)
  /// as the gathered copy the forward already made of it.
  ShardingAttr storedSharding(Value v, Block *block);
  /// Notes that `v` reaches a consumer in `block` by an all-to-all.
  void recordMove(Value v, Block *block, ShardingAttr need);
  void markGradients(MicrobatchesOp op);

  double bytes(Value v) { return rules.getBytes(cast<SymTensorType>(v.getType())); }
  int64_t degree(StringRef axis) { return rules.getDegree(axis); }

  const ShardingRules &rules;
  MLIRContext *ctx;
  /// Weight gradients, each with the sharding of its weight.
  llvm::DenseMap<Value, ShardingAttr> gradients;
  bool failedZero = false;
  /// Gathers already needed in a block, (value, axis): the next consumer of
  /// the same value gets the gathered copy for free (q, k and v projections
  /// share the gathered input, as in Megatron).
  std::set<std::tuple<void *, std::string, Block *>> gathered, paid;
  /// Values a consumer in a block reads after an all-to-all (the tokens an
  /// expert layer receives), with the sharding it reads them in.
  std::map<std::pair<void *, Block *>, ShardingAttr> moved;
};

} // namespace

//===----------------------------------------------------------------------===//
// Shardings values keep
//===----------------------------------------------------------------------===//

/// A weight gradient: the weight's sharding, with the pending partial sums
/// among `partial` that it may keep until the iteration's reduction: those
/// over axes the weight is replicated on (the data-parallel ones, and tp for
/// the norms under sequence parallelism). Under ZeRO >= 2 it is partitioned.
ShardingAttr Planner::weightGradSharding(Value grad,
                                         ArrayRef<std::string> partial) {
  auto t = cast<SymTensorType>(grad.getType());
  ShardingAttr w = gradients.lookup(grad);
  if (!w)
    w = rules.getDesired(t);
  if (rules.getPlan().zeroStage >= 2) {
    FailureOr<ShardingAttr> z =
        rules.getZeroSharding(UnknownLoc::get(ctx), t, w);
    if (failed(z)) {
      failedZero = true;
      return w;
    }
    return *z;
  }
  Layout l = Layout::of(w, t.getRank());
  for (const std::string &a : rules.getPlan().axes)
    if (a != "pp" && degree(a) > 1 && l.dimOf(a) < 0 &&
        llvm::is_contained(partial, a))
      l.partial.push_back(a);
  return l.attr(ctx);
}

ShardingAttr Planner::storedSharding(Value v, Block *block) {
  ShardingAttr s = current(v);
  // What arrived by an all-to-all is kept as it arrived: the backward does
  // not move it again (Megatron-LM keeps the experts' input tokens).
  if (auto it = moved.find({v.getAsOpaquePointer(), block}); it != moved.end())
    return it->second;
  if (!rules.getPlan().keepGathered)
    return s;
  Layout l = Layout::of(s, s.getRank());
  for (AxisList &axes : l.dims)
    llvm::erase_if(axes, [&](const std::string &a) {
      return gathered.count({v.getAsOpaquePointer(), a, block}) > 0;
    });
  l.partial.clear();
  return s.getPartialAxes().empty() ? l.attr(ctx) : s;
}

ShardingAttr Planner::keptSharding(Value v) {
  auto t = cast<SymTensorType>(v.getType());
  if (gradients.contains(v))
    return weightGradSharding(v, rules.getPlan().axes);
  // A value the frontend's plan shards keeps that sharding.
  if (ShardingAttr s = planSharding(v))
    return s;
  return rules.getDesired(t);
}

/// Weight gradients: what the backward yields, and what flows into it
/// through accumulation adds and the stacked results of reverse repeats.
void Planner::markGradients(MicrobatchesOp op) {
  // The gradient of result i updates the weight of its optimizer step.
  SmallVector<std::pair<Value, ShardingAttr>> work;
  for (auto [v, r] :
       llvm::zip(op.getBackwardBlock().getTerminator()->getOperands(),
                 op.getResults())) {
    ShardingAttr base = rules.getDesired(cast<SymTensorType>(v.getType()));
    for (Operation *user : r.getUsers())
      if (auto step = dyn_cast<OptimizerStepOp>(user))
        base = weightSharding(step.getWeight());
    work.push_back({v, base});
  }
  while (!work.empty()) {
    auto [v, base] = work.pop_back_val();
    if (!gradients.try_emplace(v, base).second)
      continue;
    Operation *def = v.getDefiningOp();
    if (!def)
      continue;
    if (auto add = dyn_cast<EwiseOp>(def)) {
      if (add.getKind() == EwiseKind::add || add.getKind() == EwiseKind::cast)
        for (Value in : add.getInputs())
          work.push_back({in, base});
    } else if (auto rep = dyn_cast<RepeatOp>(def)) {
      unsigned i = cast<OpResult>(v).getResultNumber();
      // The body yields one layer's slice of the stacked gradient.
      if (i >= rep.getNumCarried())
        work.push_back({rep.getBodyBlock().getTerminator()->getOperand(i),
                        ShardingAttr::get(ctx, base.getDims().drop_front(),
                                          base.getPartial())});
    }
  }
}

//===----------------------------------------------------------------------===//
// The assignment of axes to factors
//===----------------------------------------------------------------------===//

/// How much more moving a weight costs than moving as many activation bytes.
static constexpr double kWeightMovePenalty = 1e6;

/// Whether every use of `v` adds it to something (so a partial sum can wait).
static bool feedsOnlyAdds(Value v) {
  return !v.use_empty() && llvm::all_of(v.getUsers(), [](Operation *user) {
    auto add = dyn_cast<EwiseOp>(user);
    return add && add.getKind() == EwiseKind::add;
  });
}

LogicalResult Planner::planWithModel(Operation *op, const FactorModel &m) {
  unsigned nOperands = op->getNumOperands(), nResults = op->getNumResults();
  SmallVector<Layout> cur, want;
  SmallVector<bool> isWeight;
  for (Value v : op->getOperands()) {
    // FSDP (ZeRO-3): a weight is gathered whole before each use; the op
    // plans with the weight's own sharding.
    bool weight = bool(getSourceParam(v));
    isWeight.push_back(weight);
    ShardingAttr s = weight && rules.getPlan().zeroStage >= 3
                         ? rules.getDesired(cast<SymTensorType>(v.getType()))
                         : current(v);
    cur.push_back(Layout::of(s, m.operands[cur.size()].size()));
  }
  for (Value r : op->getResults()) {
    want.push_back(Layout::of(keptSharding(r), m.results[want.size()].size()));
    if (feedsOnlyAdds(r))
      want.back().partial = rules.getPlan().axes;
  }

  // Partial sums pass through linear ops when every operand is partial over
  // the same axes; otherwise operands are resolved first.
  AxisList passPartial;
  if (m.linear && nOperands) {
    // A sum of partial sums over the same axes is one; extra axes of one
    // operand are resolved first.
    passPartial = cur[0].partial;
    for (unsigned i = 1; i < nOperands; ++i)
      llvm::erase_if(passPartial, [&](const std::string &a) {
        return !cur[i].isPartial(a);
      });
    if (op->getNumOperands() == 2 && isa<EinsumOp>(op)) {
      // An einsum is linear in each operand: one partial operand is enough.
      passPartial = cur[0].partial.empty() ? cur[1].partial : cur[0].partial;
      if (!cur[0].partial.empty() && !cur[1].partial.empty())
        passPartial.clear();
    }
  }

  auto factorOf = [&](const Layout &l, ArrayRef<int> factors,
                      StringRef axis) -> int {
    int d = l.dimOf(axis);
    return d < 0 ? -1 : factors[d];
  };
  std::map<std::string, int> choice; // axis -> factor (-1: none)
  for (const std::string &axis : rules.getPlan().axes) {
    int64_t n = degree(axis);
    if (n <= 1 || llvm::is_contained(passPartial, axis))
      continue;
    double g = double(n - 1) / double(n);
    // Bytes a rank holds of a value in a layout.
    auto local = [&](Value v, const Layout &l) {
      double b = bytes(v);
      for (const AxisList &axes : l.dims)
        for (const std::string &a : axes)
          b /= double(degree(a));
      return b;
    };
    SmallVector<int> candidates{-1};
    for (unsigned i = 0; i < nOperands; ++i)
      if (int f = factorOf(cur[i], m.operands[i], axis); f >= 0)
        candidates.push_back(f);
    for (unsigned j = 0; j < nResults; ++j)
      if (int f = factorOf(want[j], m.results[j], axis); f >= 0)
        candidates.push_back(f);
    // A weight gradient is a partial sum over its data-parallel axes: each
    // rank computes it from its own tokens, and the sum is reduced (ZeRO-2
    // reduce-scatters it into the rank's shard). Such an axis stays on the
    // tokens: it neither splits the gradient (which would move activations
    // to the shards) nor leaves (which would gather every rank's tokens).
    bool gradientOverData = false;
    for (unsigned j = 0; j < nResults; ++j) {
      Value r = op->getResult(j);
      gradientOverData |=
          gradients.contains(r) &&
          llvm::is_contained(rules.getDataAxes(gradients.lookup(r)), axis);
    }
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
      if (int f = factorOf(cur[i], m.operands[i], axis);
          f >= 0 && m.keepSplit.test(f))
        candidates.assign({f});
    double bestCost = 0;
    int best = -2;
    for (int f : candidates) {
      if (f >= 0 && m.frozen.test(f))
        continue;
      double cost = 0;
      for (unsigned i = 0; i < nOperands; ++i) {
        int has = factorOf(cur[i], m.operands[i], axis);
        bool present = f >= 0 && llvm::is_contained(m.operands[i], f);
        std::tuple<void *, std::string, Block *> key{
            op->getOperand(i).getAsOpaquePointer(), axis, op->getBlock()};
        bool shared = gathered.count(key) || paid.count(key);
        double held = local(op->getOperand(i), cur[i]);
        // Weights are stationary: a plan moves activations to the weights
        // (Megatron's tensor parallelism), never weights to activations.
        if (isWeight[i])
          held *= kWeightMovePenalty;
        if (has >= 0 && has != f && !(shared && !present))
          cost += held * (present ? g : double(n - 1)); // a2a / gather
        if (cur[i].isPartial(axis))
          cost += 2 * held * g;
      }
      for (unsigned j = 0; j < nResults; ++j) {
        int keep = factorOf(want[j], m.results[j], axis);
        bool present = f >= 0 && llvm::is_contained(m.results[j], f);
        bool summed = f >= 0 && !present && m.summable.test(f);
        double b = local(op->getResult(j), want[j]);
        // Each rank computes its own shard of a weight gradient whole: no
        // reduction over an axis that splits the weight (ZeRO's partitions
        // of the gradient over the data axes are reduce-scatters, as meant).
        if (summed && keep >= 0 && gradients.contains(op->getResult(j))) {
          auto t = cast<SymTensorType>(op->getResult(j).getType());
          if (Layout::of(gradients.lookup(op->getResult(j)), t.getRank())
                  .dimOf(axis) >= 0)
            b *= kWeightMovePenalty;
        }
        if (summed) {
          if (!want[j].isPartial(axis)) // reduce-scatter / all-reduce
            cost += keep >= 0 ? b * double(n - 1) : 2 * b * g;
        } else if (present && keep != f) {
          cost += keep >= 0 ? b * g : b * double(n - 1); // all-to-all / gather
        }
      }
      // Ties: the layout the results keep, then that of the largest
      // operand, then the first candidate.
      auto preference = [&](int factor) {
        double w = 0;
        if (factor < 0)
          return w;
        for (unsigned j = 0; j < nResults; ++j)
          if (factorOf(want[j], m.results[j], axis) == factor)
            w = 1e300;
        for (unsigned i = 0; i < nOperands; ++i)
          if (factorOf(cur[i], m.operands[i], axis) == factor)
            w = std::max(w, bytes(op->getOperand(i)));
        return w;
      };
      if (best == -2 || cost < bestCost - 1e-9 ||
          (std::abs(cost - bestCost) <= 1e-9 && f != best &&
           preference(f) > preference(best))) {
        best = f;
        bestCost = cost;
      }
    }
    choice[axis] = best < -1 ? -1 : best;
  }

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
  for (unsigned i = 0; i < nOperands; ++i) {
    Layout l;
    for (int f : m.operands[i])
      l.dims.push_back(axesOf(f));
    l.partial = passPartial;
    needs.push_back(l.attr(ctx));
    for (const std::string &a : rules.getPlan().axes) {
      if (cur[i].dimOf(a) >= 0 && l.dimOf(a) < 0)
        gathered.insert({op->getOperand(i).getAsOpaquePointer(), a,
                         op->getBlock()});
    }
    recordMove(op->getOperand(i), op->getBlock(), needs.back());
  }
  for (unsigned j = 0; j < nResults; ++j) {
    Layout l;
    for (int f : m.results[j])
      l.dims.push_back(axesOf(f));
    l.partial = passPartial;
    for (const std::string &a : rules.getPlan().axes) {
      auto it = choice.find(a);
      if (it == choice.end() || it->second < 0)
        continue;
      bool present = llvm::is_contained(m.results[j], it->second);
      if (!present && m.summable.test(it->second))
        l.partial.push_back(a);
    }
    natural.push_back(l.attr(ctx));
    Value r = op->getResult(j);
    kept.push_back(gradients.contains(r) ? weightGradSharding(r, l.partial)
                                         : keptSharding(r));
    // Partial sums that are only added up stay partial: the sum is resolved
    // once (the gradients of the q, k and v projections, as one fused
    // projection would). A value nobody reads, or only the loss marker, is
    // not resharded, unless it is the program's output.
    bool onlyLoss =
        !isProgramOutput(op) &&
        llvm::all_of(r.getUsers(), [](Operation *u) { return isa<LossOp>(u); });
    if (onlyLoss || (!l.partial.empty() && feedsOnlyAdds(r))) {
      kept.back() = natural.back();
      continue;
    }
    // A partial sum the result may keep stays one.
    if (!l.partial.empty()) {
      Layout k = Layout::of(kept.back(), l.dims.size());
      bool keepsPartial = llvm::all_of(l.partial, [&](const std::string &a) {
        return k.isPartial(a);
      });
      if (keepsPartial && k.dims == l.dims)
        kept.back() = natural.back();
    }
  }
  setOperandShardings(op, needs);
  setResultShardings(op, kept);
  setNaturalShardings(op, natural, kept);
  return success();
}

//===----------------------------------------------------------------------===//
// Ops sharded by hand
//===----------------------------------------------------------------------===//

/// Dispatch, combine and their gradients move tokens between a token layout
/// `[b, s, ..]` and an expert-major buffer `[E, C, D]` whose token dimension
/// C holds the local tokens of the batch and sequence splits.
void Planner::planDispatchLike(Operation *op) {
  auto tokenAxes = [&](ShardingAttr tokens) {
    AxisList axes;
    unsigned rank = tokens.getRank();
    for (unsigned d = 0; d + 1 < rank; ++d)
      llvm::append_range(axes, tokens.getDimAxes(d));
    return axes;
  };
  auto bufferLayout = [&](ShardingAttr tokens) {
    Layout l;
    l.dims = {{}, tokenAxes(tokens), tokens.getDimAxes(tokens.getRank() - 1)};
    return l.attr(ctx);
  };
  auto withoutLast = [&](ShardingAttr tokens) {
    Layout l = Layout::of(tokens, tokens.getRank());
    l.dims.back().clear();
    l.partial.clear();
    return l.attr(ctx);
  };
  SmallVector<ShardingAttr> needs, natural, kept;
  if (auto d = dyn_cast<DispatchOp>(op)) {
    ShardingAttr x = keptSharding(d.getInput());
    needs = {x, withoutLast(x)};
    natural = {bufferLayout(x)};
  } else if (auto c = dyn_cast<CombineOp>(op)) {
    ShardingAttr out = keptSharding(c.getResult());
    needs = {bufferLayout(out), withoutLast(out), withoutLast(out)};
    natural = {out};
  } else if (auto g = dyn_cast<DispatchGradOp>(op)) {
    ShardingAttr dx = keptSharding(g.getResult());
    needs = {bufferLayout(dx), withoutLast(dx)};
    natural = {dx};
  } else {
    auto cg = cast<CombineGradOp>(op);
    ShardingAttr dy = keptSharding(cg.getGrad());
    needs = {dy, bufferLayout(dy), withoutLast(dy), withoutLast(dy)};
    natural = {bufferLayout(dy), withoutLast(dy)};
  }
  for (Value r : op->getResults())
    kept.push_back(keptSharding(r));
  for (auto [operand, need] : llvm::zip(op->getOperands(), needs))
    recordMove(operand, op->getBlock(), need);
  setOperandShardings(op, needs);
  setResultShardings(op, kept);
  setNaturalShardings(op, natural, kept);
}

void Planner::recordMove(Value v, Block *block, ShardingAttr need) {
  Layout has = Layout::of(current(v), need.getRank()),
         wants = Layout::of(need, need.getRank());
  if (!wants.partial.empty())
    return;
  for (const std::string &a : rules.getPlan().axes)
    if (has.dimOf(a) >= 0 && wants.dimOf(a) >= 0 &&
        has.dimOf(a) != wants.dimOf(a)) {
      moved[{v.getAsOpaquePointer(), block}] = need;
      return;
    }
}

LogicalResult Planner::planRepeat(RepeatOp op) {
  SmallVector<ShardingAttr> needs, args;
  for (Value init : op.getInits()) {
    ShardingAttr s = keptSharding(init);
    needs.push_back(s);
    args.push_back(s);
  }
  for (Value slice : op.getSlices()) {
    ShardingAttr s = current(slice);
    needs.push_back(s);
    Layout l = Layout::of(s, s.getRank());
    l.dims.erase(l.dims.begin());
    args.push_back(l.attr(ctx));
  }
  setOperandShardings(op, needs);
  setArgShardings(op, 0, args);
  if (failed(planBlock(op.getBodyBlock())))
    return failure();
  Operation *yield = op.getBodyBlock().getTerminator();
  SmallVector<ShardingAttr> yieldNeeds, results;
  for (auto [i, v] : llvm::enumerate(yield->getOperands())) {
    if (i < op.getNumCarried()) {
      yieldNeeds.push_back(args[i]);
      results.push_back(args[i]);
      continue;
    }
    ShardingAttr s = storedSharding(v, yield->getBlock());
    yieldNeeds.push_back(s);
    Layout l = Layout::of(s, s.getRank());
    l.dims.insert(l.dims.begin(), AxisList());
    results.push_back(l.attr(ctx));
  }
  setOperandShardings(yield, yieldNeeds);
  setResultShardings(op, results);
  return success();
}

LogicalResult Planner::planMicrobatches(MicrobatchesOp op) {
  if (failed(planBlock(op.getForwardBlock())))
    return failure();
  Operation *fy = op.getForwardBlock().getTerminator();
  SmallVector<ShardingAttr> kept;
  for (Value v : fy->getOperands())
    kept.push_back(storedSharding(v, fy->getBlock()));
  setOperandShardings(fy, kept);
  setArgShardings(op, 1, kept);
  markGradients(op);
  if (failed(planBlock(op.getBackwardBlock())))
    return failure();
  Operation *by = op.getBackwardBlock().getTerminator();
  SmallVector<ShardingAttr> grads;
  for (Value v : by->getOperands())
    grads.push_back(rules.getPlan().zeroStage >= 2 ? keptSharding(v) : current(v));
  setOperandShardings(by, grads);
  setResultShardings(op, grads);
  return success();
}

LogicalResult Planner::planOptimizer(OptimizerStepOp op) {
  auto wt = cast<SymTensorType>(op.getWeight().getType());
  ShardingAttr w = weightSharding(op.getWeight());
  ShardingAttr update = w;
  if (rules.getPlan().zeroStage >= 1) {
    FailureOr<ShardingAttr> z = rules.getZeroSharding(op.getLoc(), wt, w);
    if (failed(z))
      return failure();
    update = *z;
  }
  SmallVector<ShardingAttr> needs(op->getNumOperands(), update);
  setOperandShardings(op, needs);
  return success();
}

LogicalResult Planner::planOp(Operation *op) {
  if (auto p = dyn_cast<ParamOp>(op)) {
    auto t = cast<SymTensorType>(p.getType());
    // A buffer (a constant of the model, as a causal mask) is whole on every
    // rank, which slices what it needs locally; ZeRO does not touch it.
    if (p.getKind() == ParamKind::buffer && !hasPlanSharding(p)) {
      setResultShardings(op, {ShardingAttr::getReplicated(ctx, t.getRank())});
      return success();
    }
    ShardingAttr s = weightSharding(p.getResult());
    int zero = rules.getPlan().zeroStage;
    bool state =
        p.getKind() != ParamKind::weight && p.getKind() != ParamKind::buffer;
    if ((state && zero >= 1) || (!state && zero >= 3)) {
      FailureOr<ShardingAttr> z = rules.getZeroSharding(p.getLoc(), t, s);
      if (failed(z))
        return failure();
      s = *z;
    }
    setResultShardings(op, {s});
    return success();
  }
  if (auto in = dyn_cast<InputOp>(op)) {
    auto t = cast<SymTensorType>(in.getType());
    setResultShardings(op, {rules.getDesired(t, isa<IntegerType>(t.getElementType()))});
    return success();
  }
  if (isa<RecvOp>(op)) {
    setResultShardings(op, {keptSharding(op->getResult(0))});
    return success();
  }
  if (isa<SendOp>(op)) {
    setOperandShardings(op, {keptSharding(op->getOperand(0))});
    return success();
  }
  // The loss marker reads each rank's share as it is: reducing the loss
  // for logging is not part of the step's work.
  if (isa<LossOp>(op)) {
    setOperandShardings(op, {current(op->getOperand(0))});
    return success();
  }
  if (auto rep = dyn_cast<RepeatOp>(op))
    return planRepeat(rep);
  if (isa<PipelineOp, PipelineStageOp>(op)) {
    for (Region &region : op->getRegions())
      if (failed(planBlock(region.front())))
        return failure();
    return success();
  }
  if (auto mb = dyn_cast<MicrobatchesOp>(op))
    return planMicrobatches(mb);
  if (auto opt = dyn_cast<OptimizerStepOp>(op))
    return planOptimizer(opt);
  if (isa<DispatchOp, CombineOp, DispatchGradOp, CombineGradOp>(op)) {
    planDispatchLike(op);
    return success();
  }
  if (isa<YieldOp, func::ReturnOp>(op))
    return success();
  if (isa<CollectiveOpInterface>(op))
    return op->emitOpError("is already a collective: stage-shard runs once, "
                           "before stage-partition");
  FailureOr<FactorModel> m = getFactorModel(op, rules.replicatesKV());
  if (failed(m))
    return op->emitOpError("has no sharding rule");
  return planWithModel(op, *m);
}

LogicalResult Planner::planBlock(Block &block) {
  for (Operation &op : block) {
    if (failed(planOp(&op)))
      return failure();
    if (failedZero)
      return op.emitError("ZeRO cannot partition this gradient evenly over "
                          "its data-parallel group");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Every shape a rank holds must be whole: `H/tp = 32/3` names the plan's
/// problem at the op that has it.
static LogicalResult checkLocalShapes(ModuleOp module,
                                      const ShardingRules &rules) {
  const sym::Bindings &b = rules.getPlan().bindings;
  auto check = [&](Operation *op, Type type, ShardingAttr s) -> LogicalResult {
    auto t = dyn_cast<SymTensorType>(type);
    if (!t || !s)
      return success();
    for (unsigned d = 0; d < t.getRank(); ++d) {
      sym::Expr split = s.getSplitFactor(d);
      sym::Result<int64_t> local = t.getDim(d).divExact(split).evaluate(b);
      if (local)
        continue;
      InFlightDiagnostic diag = op->emitError()
                                << "the plan splits dimension " << d
                                << " unevenly: " << local.error();
      // Megatron-LM pads the vocabulary to a multiple of 128 * tp.
      sym::Result<int64_t> ways = split.evaluate(b);
      if (ways && rules.getRoles(t)[d] == Role::Vocab)
        diag.attachNote() << "pad the vocabulary when importing: "
                             "--pad-vocab-to="
                          << 128 * *ways
                          << " (Megatron-LM pads it to a multiple of 128 * tp)";
      return diag;
    }
    return success();
  };
  WalkResult r = module.walk([&](Operation *op) {
    for (Value res : op->getResults())
      if (failed(check(op, res.getType(), getSharding(res))))
        return WalkResult::interrupt();
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (failed(check(op, v.getType(), getOperandSharding(op, i))))
        return WalkResult::interrupt();
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      if (failed(check(op, op->getResult(i).getType(), getNaturalSharding(op, i))))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

namespace {
struct ShardPass : mlir::stage::impl::StageShardBase<ShardPass> {
  using StageShardBase::StageShardBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    PlanRequest req;
    req.degrees = {{"pp", pp}, {"dp", dp}, {"cp", cp}, {"ep", ep}, {"tp", tp}};
    req.order = order;
    FailureOr<ParallelPlan> plan = setUpPlan(module, req);
    if (failed(plan))
      return signalPassFailure();
    plan->sequenceParallel = sp;
    plan->keepGathered = keepGathered;
    if (zero < 0 || zero > 3) {
      emitOptionError(module) << "stage-shard: zero=" << int64_t(zero)
                              << " is not a ZeRO stage (0-3)";
      return signalPassFailure();
    }
    plan->zeroStage = zero;
    int64_t dataRanks = plan->degreeOf("dp") * plan->degreeOf("cp") *
                        plan->degreeOf("ep");
    if (zero > 0 && dataRanks == 1) {
      emitOptionError(module)
          << "stage-shard: zero=" << int64_t(zero)
          << " needs data parallelism: dp (with cp and ep) is 1, so there is "
             "nothing to partition over";
      return signalPassFailure();
    }
    if (failed(loadRules(module, rules, *plan)))
      return signalPassFailure();
    FailureOr<ShardingRules> r = ShardingRules::create(module, *plan);
    if (failed(r))
      return signalPassFailure();
    Planner planner(*r, &getContext());
    for (int round = 0; round < 2; ++round) {
      for (auto fn : module.getOps<func::FuncOp>())
        if (!fn.isExternal() && failed(planner.planBlock(fn.getBody().front())))
          return signalPassFailure();
      planner.nextRound();
    }
    if (failed(checkLocalShapes(module, *r)))
      return signalPassFailure();
  }
};
} // namespace
