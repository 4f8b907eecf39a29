//===- Search.cpp - The best plans of a model on N GPUs -------------------===//

#include "Stage/Explore/Search.h"

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Transforms/TrainPipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <chrono>
#include <numeric>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::explore;

ModelLimits mlir::stage::explore::getModelLimits(ModuleOp model,
                                                 const sym::Bindings &b) {
  auto get = [&](const char *name, int64_t fallback) {
    auto it = b.find(name);
    return it == b.end() ? fallback : it->second;
  };
  ModelLimits m;
  // tp splits every FFN width the model has (dense, expert, shared expert,
  // a state-space block's inner width): their gcd bounds it.
  int64_t ffn = 0;
  for (const char *w : {"F", "Fe", "Fs", "Di"})
    if (b.count(w))
      ffn = std::gcd(ffn, b.at(w));
  m.ffn = ffn ? ffn : 1;
  m.heads = get("H", m.ffn);
  m.kvHeads = get("KV", m.heads);
  m.vocab = get("V", 1);
  m.experts = get("E", 0);
  m.batch = get("B", 1);
  m.seq = get("S", 1);
  // Pipeline stages split the iterations of the longest layer stack.
  m.layers = 1;
  model.walk([&](RepeatOp rep) {
    if (sym::Result<int64_t> n = rep.getCount().getValue().evaluate(b))
      m.layers = std::max(m.layers, *n);
  });
  return m;
}

/// What a compiled step's structure depends on: plans with the same key
/// share one compilation and differ only in the values of dp, tp, cp, ep
/// and M. An axis of degree 1 is not in the step's shapes at all, nor is a
/// single micro-batch's M, so which are above 1 is part of the shape; and
/// more tp ranks than kv heads replicate the kv heads instead of dividing
/// them.
static std::string getShapeKey(const Plan &p, const ModelLimits &m) {
  return "pp=" + std::to_string(p.pp) + " schedule=" + p.schedule +
         " v=" + std::to_string(p.virtualStages) +
         " zero=" + std::to_string(p.zero) + " recompute=" + p.recompute +
         " sp=" + std::to_string(p.sp) + " split=" +
         std::to_string(p.dp > 1) + std::to_string(p.tp > 1) +
         std::to_string(p.cp > 1) + std::to_string(p.ep > 1) +
         std::to_string(p.microBatches > 1) +
         " kv-replicated=" + std::to_string(p.tp > m.kvHeads);
}

/// Collects the first error of a scope instead of printing it.
namespace {
struct FirstError {
  explicit FirstError(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &d) {
          if (d.getSeverity() == DiagnosticSeverity::Error && message.empty())
            message = d.str();
          return success();
        }) {}
  std::string message;
  ScopedDiagnosticHandler handler;
};
} // namespace

static sym::Bindings withRequest(sym::Bindings b, const SearchRequest &r) {
  if (r.batch)
    b["B"] = *r.batch;
  if (r.seq)
    b["S"] = *r.seq;
  return b;
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::stage::explore::compilePlan(ModuleOp model, const SearchRequest &r,
                                  const Plan &plan) {
  FailureOr<sym::Bindings> b = getModuleBindings(model);
  if (failed(b))
    return failure();
  OwningOpRef<ModuleOp> step = model.clone();
  setModuleBindings(*step, withRequest(*b, r));
  std::unique_ptr<TrainPipelineOptions> o =
      TrainPipelineOptions::createFromString(plan.options());
  if (!o)
    return model.emitError("stage-train options '") << plan.options() << "'";
  PassManager pm(model.getContext());
  if (failed(buildTrainPipeline(pm, *o, [&](const Twine &msg) {
        return model.emitError(msg);
      })))
    return failure();
  if (failed(pm.run(*step)))
    return failure();
  return step;
}

namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
} // namespace

FailureOr<SearchResult> mlir::stage::explore::searchPlans(
    ModuleOp model, const SearchRequest &r,
    const std::function<void(const SearchProgress &)> &progress) {
  FailureOr<sym::Bindings> modelBindings = getModuleBindings(model);
  if (failed(modelBindings))
    return failure();
  sym::Bindings bindings = withRequest(*modelBindings, r);
  bool trainable = false;
  model.walk([&](func::FuncOp) { trainable = true; });
  if (!trainable)
    return model.emitError("the model has no function to train");

  SpaceOptions so;
  so.gpus = r.gpus;
  so.constraints = r.constraints;
  so.maxVirtualStages = r.maxVirtualStages;
  ModelLimits limits = getModelLimits(model, bindings);
  PlanSpace space = enumeratePlans(limits, so);
  SearchResult result;
  result.enumerated = int64_t(space.plans.size());
  result.excluded = space.excluded;

  // Shapes in the order their first plan was enumerated (deterministic).
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Plan *>> shapes;
  for (const Plan &p : space.plans) {
    std::string key = getShapeKey(p, limits);
    std::vector<const Plan *> &members = shapes[key];
    if (members.empty())
      order.push_back(key);
    members.push_back(&p);
  }
  result.shapes = int64_t(order.size());

  SearchProgress sp;
  sp.shapes = result.shapes;
  for (const std::string &key : order) {
    const std::vector<const Plan *> &members = shapes[key];
    auto compileStart = Clock::now();
    FailureOr<OwningOpRef<ModuleOp>> step;
    std::string why;
    {
      FirstError error(model.getContext());
      step = compilePlan(model, r, *members.front());
      why = error.message;
    }
    result.compileSeconds += secondsSince(compileStart);
    if (failed(step)) {
      result.excluded["compilation: " + why] += int64_t(members.size());
      ++sp.shapesDone;
      continue;
    }
    FailureOr<sym::Bindings> stepBindings = getModuleBindings(**step);
    auto evaluateStart = Clock::now();
    // The step stays as compiled while its plans are evaluated.
    SymbolicCache cache;
    for (const Plan *p : members) {
      sym::Bindings b = *stepBindings;
      b["dp"] = p->dp, b["tp"] = p->tp, b["cp"] = p->cp, b["ep"] = p->ep;
      b["pp"] = p->pp, b["M"] = p->microBatches;
      FailureOr<report::StepEstimate> e;
      {
        FirstError error(model.getContext());
        e = report::estimateStep(**step, b, r.device);
        why = error.message;
      }
      ++result.evaluated;
      ++sp.evaluated;
      if (failed(e)) {
        ++result.excluded["sizes: " + why];
        continue;
      }
      if (double(e->peakBytes) > r.device.memoryCapacity) {
        ++(double(e->modelStatesBytes) > r.device.memoryCapacity
               ? result.statesOver
               : result.activationsOver);
        if (!result.smallestPeakOver || e->peakBytes < result.smallestPeakOver)
          result.smallestPeakOver = e->peakBytes;
        continue;
      }
      Candidate c;
      c.plan = *p;
      c.estimate = *e;
      double gpuSeconds = e->iterationSeconds * double(r.gpus);
      if (gpuSeconds > 0) {
        c.mfu = 3 * e->forwardFlops / (gpuSeconds * r.device.matmulFlops);
        c.tokensPerSecondPerGpu = e->tokens / gpuSeconds;
      }
      result.ranked.push_back(std::move(c));
      ++sp.fitting;
    }
    result.evaluateSeconds += secondsSince(evaluateStart);
    ++sp.shapesDone;
    if (progress)
      progress(sp);
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [](const Candidate &a, const Candidate &b) {
                     if (a.estimate.iterationSeconds !=
                         b.estimate.iterationSeconds)
                       return a.estimate.iterationSeconds <
                              b.estimate.iterationSeconds;
                     return a.estimate.peakBytes < b.estimate.peakBytes;
                   });
  return result;
}
