//===- Shard.cpp - Shardings for every value from the plan ----------------===//
//
// The pass, the shardings values keep, and the ops the planner shards by
// hand (Planner.h; PlannerFactors.cpp chooses the factors of the others).
//
//===----------------------------------------------------------------------===//

#include "Stage/Transforms/Passes.h"

#include "PlanSetup.h"
#include "Planner.h"

#include "Stage/Analysis/Bindings.h"
#include "Stage/Analysis/ParameterAnalysis.h"
#include "Stage/Dialect/Stage/IR/ShardingLayout.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"
#include "Stage/Support/Routing.h"

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

/// A sharding as plain vectors, for building.

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
  ShardingLayout l = ShardingLayout::of(w, t.getRank());
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
  ShardingLayout l = ShardingLayout::of(s, s.getRank());
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
    ShardingLayout l;
    l.dims = {{}, tokenAxes(tokens), tokens.getDimAxes(tokens.getRank() - 1)};
    return l.attr(ctx);
  };
  auto withoutLast = [&](ShardingAttr tokens) {
    ShardingLayout l = ShardingLayout::of(tokens, tokens.getRank());
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
  ShardingLayout has = ShardingLayout::of(current(v), need.getRank()),
                 wants = ShardingLayout::of(need, need.getRank());
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
    ShardingLayout l = ShardingLayout::of(s, s.getRank());
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
    ShardingLayout l = ShardingLayout::of(s, s.getRank());
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
  auto wt = op.getWeight().getType();
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
  // A KV cache is split as the keys it holds: requests over the
  // data-parallel axes, heads over tp.
  if (auto cache = dyn_cast<KVCacheOp>(op)) {
    setResultShardings(op, {rules.getDesired(cache.getType())});
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
  if (isa<PipelineOp, PipelineStageOp, ServeOp>(op)) {
    for (Region &region : op->getRegions())
      if (!region.empty() && failed(planBlock(region.front())))
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
  auto rule = dyn_cast<ShardingRuleOpInterface>(op);
  if (!rule)
    return op->emitOpError("has no sharding rule");
  ShardingRuleOptions options;
  options.replicateKV = rules.replicatesKV();
  return planWithModel(op, rule.getShardingRule(options));
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
  bool serving = isServing(module);
  // Types and shardings are uniqued: each pair is checked once.
  llvm::DenseSet<std::pair<Type, Attribute>> whole;
  auto check = [&](Operation *op, Type type, ShardingAttr s) -> LogicalResult {
    auto t = dyn_cast<SymTensorType>(type);
    if (!t || !s || !whole.insert({type, s}).second)
      return success();
    for (unsigned d = 0; d < t.getRank(); ++d) {
      sym::Expr split = s.getSplitFactor(d);
      sym::Result<int64_t> local = t.getDim(d).divExact(split).evaluate(b);
      sym::Expr dim = t.getDim(d).divExact(split);
      if (local || isPerExpertAverage(t.getDim(d)) ||
          (serving && isRequestAverage(dim)))
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

/// Context parallelism splits the sequence; a state-space scan runs along
/// all of it (its state passes from each position to the next), so a
/// cp-split scan would need its ranks to pass the state along, which no
/// framework we model does: refused rather than silently gathered.
static LogicalResult checkContextParallelScans(ModuleOp module,
                                              const ParallelPlan &plan) {
  if (plan.degreeOf("cp") == 1)
    return success();
  WalkResult r = module.walk([&](SsmScanOp scan) {
    scan.emitOpError("stage-shard: context parallelism (cp=")
        << plan.degreeOf("cp")
        << ") does not split a state-space layer: its scan runs along the "
           "whole sequence; split the model with dp, tp, pp or ep instead";
    return WalkResult::interrupt();
  });
  return failure(r.wasInterrupted());
}

/// The routing option on the module, checked against the model's experts.
static LogicalResult setUpRouting(ModuleOp module, StringRef text) {
  std::string error;
  std::optional<::stage::Routing> r = ::stage::Routing::parse(text, error);
  if (!r)
    return emitOptionError(module) << "stage-shard: routing=" << text << ": "
                                   << error;
  if (r->kind != ::stage::Routing::Uniform) {
    FailureOr<sym::Bindings> b = getModuleBindings(module);
    if (failed(b))
      return failure();
    auto E = b->find("E"), K = b->find("K");
    if (E == b->end() || K == b->end())
      return emitOptionError(module)
             << "stage-shard: routing=" << text
             << ": the model has no routed experts (E and K)";
    if (!r->shares(E->second, error))
      return emitOptionError(module)
             << "stage-shard: routing=" << text << ": " << error;
  }
  setRoutingSpec(module, r->str());
  return success();
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
    if (failed(checkContextParallelScans(module, *plan)))
      return signalPassFailure();
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
    if (failed(setUpRouting(module, routing)))
      return signalPassFailure();
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
