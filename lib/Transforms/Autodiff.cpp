//===- Autodiff.cpp - Forward graphs to training iterations ---------------===//
//
// Reverse-mode differentiation of symbolic graphs with regions. A forward
// program becomes a `stage.microbatches` op (forward and backward of one
// micro-batch) followed by optimizer steps. Each block of the forward is
// differentiated by a BlockDifferentiator that builds the matching backward
// block; what the backward asks of the forward decides what is kept:
//   - at the top level, kept values are yielded by the forward region and
//     become arguments of the backward region;
//   - in a `stage.repeat` body, kept values become stacked results of the
//     forward repeat and slices of the reverse repeat of the backward.
//
//===----------------------------------------------------------------------===//

#include "Stage/Transforms/Passes.h"

#include "FunctionInputs.h"
#include "OptionString.h"
#include "PlanSetup.h"

#include "TypeRewriting.h"

#include "Stage/Analysis/Bindings.h"
#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Analysis/PipelineSchedule.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageBuilder.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::stage {
#define GEN_PASS_DEF_STAGEAUTODIFF
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;

namespace {

/// Values that depend on a weight or on a received activation, computed over
/// a block and the bodies of its repeats.
class Activity {
public:
  explicit Activity(Block &block) { visitBlock(block); }
  bool isActive(Value v) const { return active.contains(v); }
  /// `fresh` replaces `old` (a rebuilt op's result).
  void replace(Value old, Value fresh) {
    if (active.erase(old))
      active.insert(fresh);
  }

private:
  void visitBlock(Block &block) {
    for (Operation &op : block)
      visitOp(op);
  }
  void visitOp(Operation &op) {
    if (auto p = dyn_cast<ParamOp>(op)) {
      if (p.getKind() == ParamKind::weight)
        active.insert(p.getResult());
      return;
    }
    if (isa<RecvOp>(op)) {
      active.insert(op.getResult(0));
      return;
    }
    if (auto rep = dyn_cast<RepeatOp>(op)) {
      visitRepeat(rep);
      return;
    }
    bool any = llvm::any_of(op.getOperands(),
                            [&](Value v) { return active.contains(v); });
    if (any)
      for (Value r : op.getResults())
        if (isDifferentiable(r))
          active.insert(r);
  }
  void visitRepeat(RepeatOp rep) {
    Block &body = rep.getBodyBlock();
    for (auto [slice, arg] : llvm::zip(rep.getSlices(), rep.getSliceArgs()))
      if (active.contains(slice))
        active.insert(arg);
    // A carried value is active if it enters active or becomes active in an
    // iteration: iterate to a fixed point.
    auto yield = cast<YieldOp>(body.getTerminator());
    visitBlock(body);
    while (true) {
      bool changed = false;
      for (auto [i, arg] : llvm::enumerate(rep.getCarriedArgs()))
        if (!active.contains(arg) &&
            (active.contains(rep.getInits()[i]) ||
             active.contains(yield.getValues()[i]))) {
          active.insert(arg);
          changed = true;
        }
      if (!changed)
        break;
      visitBlock(body);
    }
    for (auto [i, r] : llvm::enumerate(rep.getResults()))
      if (active.contains(yield.getValues()[i]))
        active.insert(r);
  }
  static bool isDifferentiable(Value v) {
    auto t = dyn_cast<SymTensorType>(v.getType());
    return t && isa<FloatType>(t.getElementType());
  }

  llvm::DenseSet<Value> active;
};

/// Builds the backward of one forward block.
class BlockDifferentiator : public GradientEmitter {
public:
  BlockDifferentiator(Location loc, Block &forward, Block &backward,
                      BlockDifferentiator *parent, Activity &activity)
      : forward(forward), backward(backward), parent(parent),
        activity(activity), opBuilder(loc.getContext()), graph(opBuilder, loc) {
    opBuilder.setInsertionPointToEnd(&backward);
  }

  GraphBuilder &builder() override { return graph; }
  Value getGradient(Value r) override { return adjoints.lookup(r); }
  bool needsGradient(Value v) override { return activity.isActive(v); }

  void addGradient(Value v, Value grad) override {
    if (Value old = adjoints.lookup(v)) {
      Type et = cast<SymTensorType>(old.getType()).getElementType();
      grad = graph.ewise(EwiseKind::add, {old, graph.cast(grad, et)});
    }
    adjoints[v] = grad;
  }

  Value getForward(Value v) override {
    if (Value known = kept.lookup(v))
      return known;
    Operation *def = v.getDefiningOp();
    if (def && isDefinedHere(v) && isRecomputable(def) &&
        !keepsRecomputedResult(def))
      return recompute(def, v);
    Value b = keep(v);
    kept[v] = b;
    return b;
  }

  /// Differentiates the ops of the forward block in reverse order, after
  /// re-running the ops marked for recomputation in forward order (a layer's
  /// forward before its backward, as activation checkpointing does).
  LogicalResult run() {
    SmallVector<Operation *> ops;
    for (Operation &op : forward.without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops)
      if (isRecomputable(op) && op->getNumResults() &&
          !kept.count(op->getResult(0)))
        (void)recompute(op, op->getResult(0));
    for (Operation *op : llvm::reverse(ops)) {
      graph.setLoc(op->getLoc());
      if (failed(differentiate(op)))
        return failure();
    }
    return success();
  }

  /// Values defined in this forward block that the backward keeps, in the
  /// order they were first asked for.
  ArrayRef<Value> getKeptValues() const { return keptOrder; }

  /// Updates what this level and the enclosing ones know about `old`, a
  /// result of a forward op that was rebuilt as `fresh`.
  void replaceForwardValue(Value old, Value fresh) {
    for (BlockDifferentiator *d = this; d; d = d->parent) {
      for (Value &v : d->keptOrder)
        if (v == old)
          v = fresh;
      for (auto *map : {&d->kept, &d->adjoints})
        if (auto it = map->find(old); it != map->end()) {
          Value mapped = it->second;
          map->erase(it);
          (*map)[fresh] = mapped;
        }
    }
    activity.replace(old, fresh);
  }


protected:
  /// Makes `v` available in the backward block.
  virtual Value keep(Value v) = 0;

  bool isDefinedHere(Value v) const {
    Block *owner = isa<BlockArgument>(v)
                       ? cast<BlockArgument>(v).getOwner()
                       : v.getDefiningOp()->getBlock();
    return owner == &forward;
  }

  Block &forward, &backward;
  BlockDifferentiator *parent;
  Activity &activity;
  OpBuilder opBuilder;
  GraphBuilder graph;
  llvm::DenseMap<Value, Value> adjoints, kept;
  SmallVector<Value> keptOrder;

private:
  /// Re-runs a forward op the recompute policy marked, right before the
  /// first backward op that needs it; its operands are again kept or
  /// recomputed.
  Value recompute(Operation *def, Value v) {
    IRMapping map;
    for (Value operand : def->getOperands())
      map.map(operand, getForward(operand));
    Operation *clone = opBuilder.clone(*def, map);
    clearRecomputeMarks(clone);
    markRecomputation(clone);
    // A result that is stored anyway is re-run but not read back.
    if (keepsRecomputedResult(def))
      return clone->getResult(cast<OpResult>(v).getResultNumber());
    for (auto [o, c] : llvm::zip(def->getResults(), clone->getResults()))
      kept[o] = c;
    return kept.lookup(v);
  }

  LogicalResult differentiate(Operation *op);
  LogicalResult differentiateRepeat(RepeatOp rep);
};

/// The top level of a micro-batch: kept values cross from the forward to
/// the backward region.
class MicrobatchDifferentiator : public BlockDifferentiator {
public:
  using BlockDifferentiator::BlockDifferentiator;

protected:
  Value keep(Value v) override {
    if (!isDefinedHere(v))
      return v; // a weight, defined outside the micro-batch loop
    keptOrder.push_back(v);
    return backward.addArgument(v.getType(), v.getLoc());
  }
};

/// The body of a repeat: kept values are stacked over the iterations.
class RepeatDifferentiator : public BlockDifferentiator {
public:
  RepeatDifferentiator(RepeatOp rep, Block &backward,
                       BlockDifferentiator *parent, Activity &activity)
      : BlockDifferentiator(rep.getLoc(), rep.getBodyBlock(), backward, parent,
                            activity),
        rep(rep) {}

  /// Outer values to feed the reverse repeat as slices, one per slice
  /// argument added to the backward body, available after rebuild().
  SmallVector<Value> sliceOperands;

  /// Gives the forward repeat one stacked result per kept body value and
  /// returns the new repeat.
  RepeatOp rebuild() {
    if (keptOrder.empty()) {
      finishSlices(rep);
      return rep;
    }
    auto yield = cast<YieldOp>(forward.getTerminator());
    SmallVector<Value> values(yield.getValues());
    values.append(keptOrder.begin(), keptOrder.end());
    SmallVector<Type> types(rep.getResultTypes());
    for (Value v : keptOrder)
      types.push_back(
          cast<SymTensorType>(v.getType()).stacked(rep.getCount().getValue()));
    OpBuilder b(rep);
    auto fresh = RepeatOp::create(b, rep.getLoc(), types, rep.getCount(),
                                  rep.getReverseAttr(), rep.getInits(),
                                  rep.getSlices());
    fresh->setDiscardableAttrs(rep->getDiscardableAttrDictionary());
    fresh.getBody().takeBody(rep.getBody());
    OpBuilder yb(yield);
    YieldOp::create(yb, yield.getLoc(), values);
    yield.erase();
    for (auto [o, n] : llvm::zip(rep.getResults(),
                                 fresh.getResults().take_front(rep.getNumResults()))) {
      o.replaceAllUsesWith(n);
      parent->replaceForwardValue(o, n);
    }
    rep.erase();
    rep = fresh;
    finishSlices(fresh);
    return fresh;
  }

protected:
  Value keep(Value v) override {
    if (!isDefinedHere(v))
      return parent->getForward(v); // captured from an enclosing level
    auto arg = dyn_cast<BlockArgument>(v);
    if (arg && arg.getArgNumber() >= rep.getNumCarried()) {
      // A weight slice: slice the same stack in the backward.
      Value stack = rep.getSlices()[arg.getArgNumber() - rep.getNumCarried()];
      pending.push_back({stack, -1});
      return backward.addArgument(v.getType(), v.getLoc());
    }
    pending.push_back({Value(), int(keptOrder.size())});
    keptOrder.push_back(v);
    return backward.addArgument(v.getType(), v.getLoc());
  }

private:
  /// Resolves the slice operands once the stacked results exist.
  void finishSlices(RepeatOp fresh) {
    unsigned base = fresh.getNumResults() - keptOrder.size();
    for (auto [stack, index] : pending)
      sliceOperands.push_back(parent->getForward(
          index < 0 ? stack : fresh.getResult(base + index)));
  }

  RepeatOp rep;
  SmallVector<std::pair<Value, int>> pending;
};

} // namespace

LogicalResult BlockDifferentiator::differentiate(Operation *op) {
  if (isa<ParamOp, InputOp, LossOp, SendOp>(op))
    return success(); // leaves, and seeds handled before the walk
  if (auto recv = dyn_cast<RecvOp>(op)) {
    if (Value g = adjoints.lookup(recv.getResult()))
      SendOp::create(opBuilder, recv.getLoc(), g, recv.getGridAttr(),
                     recv.getAxesAttr(), recv.getShiftAttr(),
                     opBuilder.getI64IntegerAttr(recv.getChannel() + 1));
    return success();
  }
  if (auto rep = dyn_cast<RepeatOp>(op))
    return differentiateRepeat(rep);
  bool anyGradient = llvm::any_of(
      op->getResults(), [&](Value r) { return bool(adjoints.lookup(r)); });
  if (!anyGradient)
    return success();
  auto rule = dyn_cast<AutodiffOpInterface>(op);
  if (!rule)
    return op->emitOpError("has no gradient rule");
  return rule.buildGradient(*this);
}

LogicalResult BlockDifferentiator::differentiateRepeat(RepeatOp rep) {
  unsigned nCarry = rep.getNumCarried();
  SmallVector<Value> carriedGrads;
  bool anyGradient = false;
  for (unsigned i = 0; i < nCarry; ++i) {
    Value g = adjoints.lookup(rep.getResult(i));
    anyGradient |= bool(g);
    carriedGrads.push_back(g);
  }
  if (!anyGradient)
    return success();
  for (auto [i, g] : llvm::enumerate(carriedGrads))
    if (!g)
      return rep.emitOpError("carried value ")
             << i << " has no gradient while another one has";

  // The reverse body: carried gradients first, then slices as asked for.
  // Owned here until the reverse repeat takes it (freed on an error).
  auto body = std::make_unique<Block>();
  for (Value g : carriedGrads)
    body->addArgument(g.getType(), rep.getLoc());
  RepeatDifferentiator inner(rep, *body, this, activity);
  auto yield = cast<YieldOp>(rep.getBodyBlock().getTerminator());
  for (unsigned i = 0; i < nCarry; ++i)
    inner.addGradient(yield.getValues()[i], body->getArgument(i));
  if (failed(inner.run())) {
    return failure();
  }

  SmallVector<Value> yields;
  for (BlockArgument arg : rep.getCarriedArgs()) {
    Value g = inner.getGradient(arg);
    if (!g) {
      return rep.emitOpError("a carried value's gradient does not reach the "
                             "start of the body");
    }
    yields.push_back(g);
  }
  SmallVector<unsigned> gradSlices;
  for (auto [j, arg] : llvm::enumerate(rep.getSliceArgs()))
    if (Value g = inner.getGradient(arg)) {
      yields.push_back(g);
      gradSlices.push_back(j);
    }
  OpBuilder yb(rep.getContext());
  yb.setInsertionPointToEnd(body.get());
  YieldOp::create(yb, rep.getLoc(), yields);

  // rebuild() replaces `rep`: nothing of it is read after this point.
  Location loc = rep.getLoc();
  RepeatOp forwardRep = inner.rebuild();
  SmallVector<Type> types;
  for (Value g : carriedGrads)
    types.push_back(g.getType());
  for (unsigned k = nCarry; k < yields.size(); ++k)
    types.push_back(cast<SymTensorType>(yields[k].getType())
                        .stacked(forwardRep.getCount().getValue()));
  auto reverse = RepeatOp::create(opBuilder, loc, types,
                                  forwardRep.getCount(),
                                  opBuilder.getUnitAttr(), carriedGrads,
                                  inner.sliceOperands);
  reverse.getBody().push_back(body.release());

  for (unsigned i = 0; i < nCarry; ++i)
    if (needsGradient(forwardRep.getInits()[i]))
      addGradient(forwardRep.getInits()[i], reverse.getResult(i));
  for (auto [k, j] : llvm::enumerate(gradSlices))
    addGradient(forwardRep.getSlices()[j], reverse.getResult(nCarry + k));
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct TrainingOptions {
  int64_t microBatches;
  OptimizerKind optimizer;
  bool mixedPrecision;
};
} // namespace

/// Rewrites one forward program (the ops of `body` before `terminator`)
/// into a training iteration.
static LogicalResult trainProgram(Block &body, Operation *terminator,
                                  const TrainingOptions &opts) {
  MLIRContext *ctx = terminator->getContext();
  Location loc = terminator->getLoc();
  OpBuilder b(ctx);

  // Weights stay outside the micro-batch loop; everything else moves in.
  SmallVector<ParamOp> weights;
  SmallVector<Operation *> forwardOps;
  for (Operation &op : body.without_terminator()) {
    if (auto p = dyn_cast<ParamOp>(op)) {
      if (p.getKind() == ParamKind::buffer)
        continue; // held like a weight, never trained
      if (p.getKind() != ParamKind::weight)
        return p.emitOpError("is an optimizer state: the program is already "
                             "a training step");
      weights.push_back(p);
    } else if (isa<MicrobatchesOp, OptimizerStepOp>(op)) {
      return op.emitOpError("is already part of a training step");
    } else {
      forwardOps.push_back(&op);
    }
  }

  // Activity is keyed by value, so it survives moving the ops below.
  Activity activity(body);
  // Owned here until the micro-batch loop takes them (freed on an error,
  // the backward first: its ops read the forward's values).
  auto fwd = std::make_unique<Block>();
  auto bwd = std::make_unique<Block>();
  for (Operation *op : forwardOps)
    op->moveBefore(fwd.get(), fwd->end());
  b.setInsertionPointToEnd(fwd.get());
  auto fwdYield = YieldOp::create(b, loc);

  // One micro-batch holds B/M sequences.
  sym::Substitution perMicrobatch{
      {"B", sym::Expr::symbol("B").divExact(sym::Expr::symbol("M"))}};
  if (opts.microBatches > 1)
    for (Operation &op : *fwd)
      substituteSymbols(&op, perMicrobatch);

  // On an error the forward ops go back where they were (the terminator
  // reads them) before the blocks are freed; the backward's ops only read
  // values of the forward.
  auto abandon = [&]() {
    for (Operation *op : forwardOps)
      op->moveBefore(terminator);
    bwd.reset();
    fwd.reset();
  };

  MicrobatchDifferentiator diff(loc, *fwd, *bwd, nullptr, activity);
  // Seeds: each result of the program, each loss, and the gradients of sent
  // activations, which come back from the peer.
  OpBuilder sb(ctx);
  sb.setInsertionPointToStart(bwd.get());
  GraphBuilder seeds(sb, loc);
  unsigned nSeeds = 0;
  auto seed = [&](Value v) {
    diff.addGradient(v, seeds.input("seed." + std::to_string(nSeeds++),
                                    cast<SymTensorType>(v.getType()).getDims(),
                                    cast<SymTensorType>(v.getType()).getElementType()));
  };
  // A result that is not a scalar loss is an activation the rest of the
  // model reads.
  bool hasLoss =
      llvm::any_of(*fwd, [](Operation &op) { return isa<LossOp>(op); });
  for (Value v : terminator->getOperands())
    if (activity.isActive(v)) {
      seed(v);
      Operation *def = v.getDefiningOp();
      if (def && !hasLoss && cast<SymTensorType>(v.getType()).getRank() > 0)
        markProgramOutput(def);
    }
  for (Operation &op : *fwd) {
    if (auto l = dyn_cast<LossOp>(op))
      seed(l.getInput());
    if (auto s = dyn_cast<SendOp>(op))
      if (activity.isActive(s.getInput()))
        diff.addGradient(
            s.getInput(),
            RecvOp::create(sb, s.getLoc(), s.getInput().getType(),
                           s.getGridAttr(), s.getAxesAttr(), s.getShiftAttr(),
                           sb.getI64IntegerAttr(s.getChannel() + 1)));
  }
  if (nSeeds == 0 && llvm::none_of(*fwd, [](Operation &op) {
        return isa<SendOp>(op);
      })) {
    abandon();
    return terminator->emitError("nothing to differentiate: the program has "
                                 "no loss, result or sent activation that "
                                 "depends on a weight");
  }
  if (failed(diff.run())) {
    abandon();
    return failure();
  }

  // Forward yields what the backward keeps; backward yields weight grads.
  b.setInsertionPoint(fwdYield);
  YieldOp::create(b, loc, diff.getKeptValues());
  fwdYield.erase();
  SmallVector<Value> grads;
  SmallVector<ParamOp> trained;
  for (ParamOp w : weights)
    if (Value g = diff.getGradient(w.getResult())) {
      grads.push_back(g);
      trained.push_back(w);
    }
  b.setInsertionPointToEnd(bwd.get());
  YieldOp::create(b, loc, grads);
  // The loss seeds its own gradient (cross-entropy); drop seeds nobody read.
  for (Operation &op : llvm::make_early_inc_range(*bwd))
    if (auto in = dyn_cast<InputOp>(op))
      if (in.getName().starts_with("seed.") && in->use_empty())
        in.erase();

  b.setInsertionPoint(terminator);
  SmallVector<Type> gradTypes;
  for (Value g : grads)
    gradTypes.push_back(g.getType());
  auto mb = MicrobatchesOp::create(
      b, loc, gradTypes,
      ExprAttr::get(ctx, opts.microBatches > 1 ? sym::Expr::symbol("M")
                                               : sym::Expr(1)));
  mb.getForward().push_back(fwd.release());
  mb.getBackward().push_back(bwd.release());

  // Optimizer states next to their weights, updates after the loop.
  Type f32 = b.getF32Type();
  for (auto [w, g] : llvm::zip(trained, mb.getResults())) {
    OpBuilder sbuilder(w);
    sbuilder.setInsertionPointAfter(w);
    GraphBuilder states(sbuilder, w.getLoc());
    auto wt = cast<SymTensorType>(w.getType());
    StringRef group = w.getGroup().value_or("");
    Value master, m, v;
    if (opts.mixedPrecision && wt.getElementType() != f32)
      master = states.param(w.getName(), wt.getDims(), f32, group,
                            ParamKind::master);
    if (opts.optimizer != OptimizerKind::sgd) {
      m = states.param(w.getName(), wt.getDims(), f32, group,
                       ParamKind::exp_avg);
      v = states.param(w.getName(), wt.getDims(), f32, group,
                       ParamKind::exp_avg_sq);
    }
    // States are sharded as their weight (a frontend's plan, if any).
    if (ShardingAttr plan = getPlanSharding(w))
      for (Value state : {master, m, v})
        if (state)
          setPlanSharding(state.getDefiningOp(), plan);
    OptimizerStepOp::create(b, w.getLoc(), opts.optimizer, w, g, master, m, v);
  }
  return success();
}

static PipelineOp getPipeline(func::FuncOp fn) {
  auto ops = fn.getBody().front().getOps<PipelineOp>();
  return ops.empty() ? PipelineOp() : *ops.begin();
}

namespace {
struct AutodiffPass
    : mlir::stage::impl::StageAutodiffBase<AutodiffPass> {
  using StageAutodiffBase::StageAutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<int64_t> m = resolveMicroBatches(module);
    if (failed(m))
      return signalPassFailure();
    microBatchCount = *m;
    TrainingOptions opts;
    opts.microBatches = microBatchCount;
    FailureOr<OptimizerKind> kind = parseEnumOption<OptimizerKind>(
        module, "stage-autodiff", "optimizer", optimizer,
        getMaxEnumValForOptimizerKind());
    if (failed(kind))
      return signalPassFailure();
    FailureOr<TrainingPrecision> prec = parseEnumOption<TrainingPrecision>(
        module, "stage-autodiff", "precision", precision,
        getMaxEnumValForTrainingPrecision());
    if (failed(prec))
      return signalPassFailure();
    opts.optimizer = *kind;
    opts.mixedPrecision = *prec == TrainingPrecision::mixed;
    if (microBatchCount < 1) {
      emitOptionError(module)
          << "stage-autodiff: micro-batches must be at least 1, got "
          << microBatchCount;
      return signalPassFailure();
    }
    if (failed(checkMicroBatches(module)))
      return signalPassFailure();
    if (llvm::none_of(module.getOps<func::FuncOp>(),
                      [](func::FuncOp f) { return !f.isExternal(); })) {
      module.emitError("stage-autodiff: the module has no function to train");
      return signalPassFailure();
    }

    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (fn.isExternal())
        continue;
      if (!opts.mixedPrecision)
        convertFloatsToF32(fn);
      // A pipelined program: every stage is trained on its own.
      if (auto pipe = getPipeline(fn)) {
        ScheduleShape shape{pipe.getSchedule(), pipe.getNumPhysicalStages(),
                            int64_t(pipe.getVirtualStages()), microBatchCount};
        if (std::string why = checkSchedule(shape); !why.empty()) {
          pipe.emitError("stage-autodiff: micro-batches=")
              << microBatchCount << ": " << why;
          return signalPassFailure();
        }
        for (PipelineStageOp st : getPipelineStages(pipe)) {
          Block &body = st.getBody().front();
          if (failed(trainProgram(body, body.getTerminator(), opts)))
            return signalPassFailure();
        }
        continue;
      }
      convertArgumentsToInputs(fn);
      Block &entry = fn.getBody().front();
      Operation *ret = entry.getTerminator();
      if (failed(trainProgram(entry, ret, opts)))
        return signalPassFailure();
      OpBuilder b(ret);
      func::ReturnOp::create(b, ret->getLoc());
      ret->erase();
      fn.setFunctionType(FunctionType::get(&getContext(), {}, {}));
    }
  }

  /// The micro-batch microBatchCount: `micro-batches`, or from Megatron-LM's
  /// `micro-batch-size`, M = B / (size * dp * ep).
  FailureOr<int64_t> resolveMicroBatches(ModuleOp module) {
    if (microBatchSize == 0)
      return int64_t(microBatches);
    if (microBatchSize < 0)
      return emitOptionError(module)
             << "stage-autodiff: micro-batch-size=" << int64_t(microBatchSize)
             << " is not positive";
    FailureOr<sym::Bindings> b = getModuleBindings(module);
    if (failed(b))
      return failure();
    auto batch = b->find("B");
    if (batch == b->end())
      return emitOptionError(module)
             << "stage-autodiff: micro-batch-size needs the batch B bound";
    FailureOr<int64_t> d = getRequestedDegree(module, "dp", dp);
    FailureOr<int64_t> e = getRequestedDegree(module, "ep", ep);
    if (failed(d) || failed(e))
      return failure();
    int64_t perMicrobatch = microBatchSize * *d * *e;
    if (batch->second % perMicrobatch != 0)
      return emitOptionError(module)
             << "stage-autodiff: micro-batch-size=" << int64_t(microBatchSize)
             << " does not divide the batch: B / (micro-batch-size * dp * ep) "
                "= "
             << batch->second << " / (" << int64_t(microBatchSize) << " * "
             << *d << " * " << *e << ") is not an integer";
    return batch->second / perMicrobatch;
  }

  /// The micro-batch microBatchCount of this run.
  int64_t microBatchCount = 1;

  /// M must divide the batch: `B/M = 1536/7 is not an integer`.
  LogicalResult checkMicroBatches(ModuleOp module) {
    FailureOr<sym::Bindings> b = getModuleBindings(module);
    if (failed(b))
      return failure();
    if (microBatchCount > 1) {
      auto it = b->find("B");
      if (it != b->end() && it->second % microBatchCount != 0)
        return emitOptionError(module)
               << "stage-autodiff: micro-batches=" << microBatchCount
               << " does not divide the batch: B/M = " << it->second << "/"
               << microBatchCount << " is not an integer";
      (*b)["M"] = microBatchCount;
      setModuleBindings(module, *b);
    }
    return success();
  }
};
} // namespace
