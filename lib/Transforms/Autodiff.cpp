//===- Autodiff.cpp - Forward graphs to training iterations ---------------===//
//
// A forward program becomes a `stage.microbatches` op (forward and backward
// of one micro-batch, built by the differentiators of
// BlockDifferentiator.h) followed by optimizer steps.
//
//===----------------------------------------------------------------------===//

#include "Stage/Transforms/Passes.h"

#include "BlockDifferentiator.h"
#include "FunctionInputs.h"
#include "OptionString.h"
#include "PlanSetup.h"

#include "Stage/Dialect/Stage/IR/StageTypeRewriting.h"

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

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct TrainingOptions {
  int64_t microBatches;
  OptimizerKind optimizer;
  bool mixedPrecision;
  /// DualPipe: each of the two copies of a stage runs half the micro-batches.
  bool halfOfMicroBatches = false;
};
} // namespace

/// Rewrites one forward program (the ops of `body` before `terminator`)
/// into a training iteration. One function: the forward region, the seeds,
/// the backward and the optimizer steps share the blocks being built and
/// must all be undone together on an error.
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
                                 "depends on a weight (a stage.param; from "
                                 "linalg, annotate the weight arguments "
                                 "with stage.param or name them with "
                                 "--convert-linalg-to-stage=\"weights=1,2\")");
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
  sym::Expr count =
      opts.microBatches > 1 ? sym::Expr::symbol("M") : sym::Expr(1);
  if (opts.halfOfMicroBatches)
    count = count.divExact(sym::Expr(2));
  auto mb =
      MicrobatchesOp::create(b, loc, gradTypes, ExprAttr::get(ctx, count));
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
        TrainingOptions stageOpts = opts;
        stageOpts.halfOfMicroBatches = isMirrored(pipe.getSchedule());
        for (PipelineStageOp st : getPipelineStages(pipe)) {
          Block &body = st.getBody().front();
          if (failed(trainProgram(body, body.getTerminator(), stageOpts)))
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
