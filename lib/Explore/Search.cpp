//===- Search.cpp - The best plans of a model on N GPUs -------------------===//

#include "Stage/Explore/Search.h"

#include "PipelineBounds.h"

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Transforms/InferPipeline.h"
#include "Stage/Transforms/TrainPipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <atomic>
#include <cmath>
#include <ctime>
#include <mutex>
#include <numeric>
#include <thread>

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
/// and M. An axis of degree 1 is not in the step's shapes at all, so which
/// axes are split is part of the shape; and more tp ranks than kv heads
/// replicate the kv heads instead of dividing them. A single micro-batch
/// folds M away, so a shape compiles with more than one where it can (its
/// step evaluates at M = 1 as the M = 1 step does).
static std::string getShapeKey(const Plan &p, const ModelLimits &m) {
  if (p.serving)
    return "serve pp=" + std::to_string(p.pp) + " sp=" + std::to_string(p.sp) +
           " split=" + std::to_string(p.dp > 1) + std::to_string(p.tp > 1) +
           std::to_string(p.cp > 1) + std::to_string(p.ep > 1) +
           " kv-replicated=" + std::to_string(p.tp > m.kvHeads);
  return "pp=" + std::to_string(p.pp) + " schedule=" + p.schedule +
         " v=" + std::to_string(p.virtualStages) +
         " zero=" + std::to_string(p.zero) + " recompute=" + p.recompute +
         " sp=" + std::to_string(p.sp) + " split=" + std::to_string(p.dp > 1) +
         std::to_string(p.tp > 1) + std::to_string(p.cp > 1) +
         std::to_string(p.ep > 1) +
         " kv-replicated=" + std::to_string(p.tp > m.kvHeads);
}

namespace {
/// Where this thread's errors go instead of the terminal, while a search
/// runs: the search installs one handler for the context, which hands each
/// diagnostic to the capture of the thread that emitted it.
thread_local std::string *errorSink = nullptr;

/// Keeps the first error emitted on this thread while alive.
struct FirstError {
  FirstError() : previous(errorSink) { errorSink = &message; }
  ~FirstError() { errorSink = previous; }
  std::string message;
  std::string *previous;
};

/// Routes the diagnostics of threads with a FirstError to it.
struct ErrorRouting {
  explicit ErrorRouting(MLIRContext *ctx)
      : handler(ctx, [](Diagnostic &d) -> LogicalResult {
          if (!errorSink)
            return failure(); // not captured: the next handler prints it
          if (d.getSeverity() == DiagnosticSeverity::Error &&
              errorSink->empty())
            *errorSink = d.str();
          return success();
        }) {}
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

/// Adds the pipeline `tool` builds from `plan`'s options to `pm`; errors
/// at `model`.
template <typename Options, typename Build>
static LogicalResult addPlanPipeline(PassManager &pm, ModuleOp model,
                                     const Plan &plan, StringRef tool,
                                     Build build) {
  std::unique_ptr<Options> o = Options::createFromString(plan.options());
  if (!o)
    return model.emitError(tool) << " options '" << plan.options() << "'";
  return build(pm, *o, [&](const Twine &msg) { return model.emitError(msg); });
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::stage::explore::compilePlan(ModuleOp model, const SearchRequest &r,
                                  const Plan &plan) {
  FailureOr<sym::Bindings> b = getModuleBindings(model);
  if (failed(b))
    return failure();
  OwningOpRef<ModuleOp> step = model.clone();
  sym::Bindings bindings = withRequest(*b, r);
  if (plan.serving && plan.batch)
    bindings["B"] = plan.batch;
  setModuleBindings(*step, bindings);
  PassManager pm(model.getContext());
  if (failed(plan.serving
                 ? addPlanPipeline<InferPipelineOptions>(
                       pm, model, plan, "stage-infer",
                       [](auto &&...a) { return buildInferPipeline(a...); })
                 : addPlanPipeline<TrainPipelineOptions>(
                       pm, model, plan, "stage-train",
                       [](auto &&...a) { return buildTrainPipeline(a...); })))
    return failure();
  if (failed(pm.run(*step)))
    return failure();
  return step;
}

namespace {
/// A lower bound of a plan's model states per rank, from the whole model's
/// (one rank, no ZeRO): every weight split at most by tp x ep, and the
/// parts ZeRO shards also by dp x cp; the largest stage holds at least the
/// average, 1/pp. A plan above the device by this bound needs no compile.
struct StatesBound {
  double parameters = 0, weight = 0, gradient = 0, optimizer = 0; // B/param
  double of(const Plan &p) const {
    double split = double(p.tp * p.ep), shard = double(p.dp * p.cp);
    return parameters / double(p.pp) / split *
           (weight / (p.zero >= 3 ? shard : 1) +
            gradient / (p.zero >= 2 ? shard : 1) +
            optimizer / (p.zero >= 1 ? shard : 1));
  }
};

std::optional<StatesBound> getStatesBound(ModuleOp model,
                                          const SearchRequest &r) {
  FirstError quiet;
  FailureOr<OwningOpRef<ModuleOp>> whole = compilePlan(model, r, Plan());
  if (failed(whole))
    return std::nullopt;
  sym::Bindings b = *getModuleBindings(**whole);
  FailureOr<report::StepEstimate> e =
      report::estimateStep(**whole, b, r.device);
  if (failed(e) || e->parameters <= 0)
    return std::nullopt;
  return StatesBound{e->parameters, e->weightBytes / e->parameters,
                     e->gradientBytes / e->parameters,
                     e->optimizerBytes / e->parameters};
}

/// The calling thread's CPU time in seconds: the search's phases are timed
/// per core (summed over the threads), whatever else the machine runs.
double threadSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
}
} // namespace

namespace {
/// What one shape's compilation and plans came to.
struct ShapeOutcome {
  /// The plans that fit, with their index in the plan space.
  std::vector<std::pair<size_t, Candidate>> ranked;
  std::map<std::string, int64_t> excluded;
  int64_t evaluated = 0, boundSkipped = 0;
  int64_t statesOver = 0, activationsOver = 0;
  int64_t smallestPeakOver = 0;
  int64_t overLatency = 0;
  double smallestTpotOver = 0;
  double compileSeconds = 0, evaluateSeconds = 0, firstPlanSeconds = 0;
};

/// The shortest iterations found so far, up to `keep` of them (all plans
/// when 0): a plan whose iteration is bounded below by more than the
/// longest of them cannot join them.
struct BestTimes {
  size_t keep = 0;
  std::vector<double> times; // ascending
  void add(double t) {
    if (!keep)
      return;
    times.insert(llvm::upper_bound(times, t), t);
    if (times.size() > keep)
      times.pop_back();
  }
  /// Whether a plan bounded below by `bound` cannot join them (with a
  /// margin for the rounding of the bound's and the iteration's sums).
  bool excludes(double bound) const {
    return keep && times.size() == keep && bound * (1 - 1e-9) > times.back();
  }
};

/// Lower bounds of each plan's iteration (seconds) and peak memory (bytes),
/// 0 where none was computed.
struct PlanBounds {
  std::vector<double> iteration, peak;
};

/// Runs `fn(i)` for i in [0, n) on up to `threads` threads.
void parallelFor(size_t n, unsigned threads,
                 const std::function<void(size_t)> &fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++)
      fn(i);
  };
  threads = std::min<unsigned>(threads, std::max<size_t>(n, 1));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
}

sym::Bindings planBindings(sym::Bindings b, const Plan &p) {
  b["dp"] = p.dp, b["tp"] = p.tp, b["cp"] = p.cp, b["ep"] = p.ep;
  b["pp"] = p.pp, b["M"] = p.microBatches;
  if (p.serving)
    b["B"] = p.batch;
  return b;
}

/// The plan with the most micro-batches (and requests) of `members`, the
/// first enumerated of those: the one to compile their shape with, so that
/// M stays a symbol, whatever the order of `members`.
const Plan &getRepresentative(ArrayRef<size_t> members,
                              const std::vector<Plan> &plans) {
  auto key = [&](size_t i) {
    return std::make_tuple(plans[i].microBatches, plans[i].batch, -int64_t(i));
  };
  return plans[*llvm::max_element(
      members, [&](size_t a, size_t b) { return key(a) < key(b); })];
}

/// `candidates` grouped by `key`, the groups in the order of their first
/// member (deterministic).
std::vector<std::vector<size_t>>
groupBy(ArrayRef<size_t> candidates, function_ref<std::string(size_t)> key) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> index;
  for (size_t i : candidates) {
    auto [it, added] = index.try_emplace(key(i), groups.size());
    if (added)
      groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}
} // namespace

/// Compiles `representative`'s step and evaluates `members` on it as
/// searchShape says; the members other than the representative whose sizes
/// do not divide on it go to `own`. False if the step does not compile.
static bool searchStep(ModuleOp model, const SearchRequest &r,
                       const Plan &representative, ArrayRef<size_t> members,
                       const std::vector<Plan> &plans, const PlanBounds &bounds,
                       BestTimes &best, ShapeOutcome &out,
                       std::vector<size_t> &own) {
  double compileStart = threadSeconds();
  FailureOr<OwningOpRef<ModuleOp>> step;
  std::string why;
  {
    FirstError error;
    step = compilePlan(model, r, representative);
    why = error.message;
  }
  out.compileSeconds += threadSeconds() - compileStart;
  if (failed(step)) {
    out.excluded["compilation: " + why] += int64_t(members.size());
    return false;
  }
  FailureOr<sym::Bindings> stepBindings = getModuleBindings(**step);
  double evaluateStart = threadSeconds();
  // The step stays as compiled while its plans are evaluated.
  SymbolicCache cache;
  for (auto [n, index] : llvm::enumerate(members)) {
    if (best.excludes(bounds.iteration[index])) {
      // The members come in the order of their bounds.
      out.boundSkipped += int64_t(members.size() - n);
      break;
    }
    const Plan &p = plans[index];
    FailureOr<report::StepEstimate> e;
    {
      FirstError error;
      // The first plan's evaluation also derives what the cache keeps: its
      // time too, should it not fit (later plans skip that). Timed alone
      // (reading a thread's CPU clock is a system call).
      double planStart = n == 0 ? threadSeconds() : 0;
      e = report::estimateStep(**step, planBindings(*stepBindings, p), r.device,
                               n == 0 ? 0.0 : r.device.memoryCapacity);
      if (n == 0)
        out.firstPlanSeconds += threadSeconds() - planStart;
      why = error.message;
    }
    if (failed(e) && &p != &representative) {
      own.push_back(index);
      continue;
    }
    ++out.evaluated;
    if (failed(e)) {
      ++out.excluded["sizes: " + why];
      continue;
    }
    if (double(e->peakBytes) > r.device.memoryCapacity) {
      ++(double(e->modelStatesBytes) > r.device.memoryCapacity
             ? out.statesOver
             : out.activationsOver);
      if (!out.smallestPeakOver || e->peakBytes < out.smallestPeakOver)
        out.smallestPeakOver = e->peakBytes;
      continue;
    }
    Candidate c;
    c.plan = p;
    c.estimate = *e;
    c.iterationBound = bounds.iteration[index];
    c.peakBound = int64_t(bounds.peak[index]);
    if (e->serving) {
      if (r.maxTpotSeconds > 0 && e->tpotSeconds > r.maxTpotSeconds) {
        ++out.overLatency;
        if (!out.smallestTpotOver || e->tpotSeconds < out.smallestTpotOver)
          out.smallestTpotOver = e->tpotSeconds;
        continue;
      }
      if (e->tpotSeconds > 0)
        c.tokensPerSecondPerGpu =
            double(p.batch) / e->tpotSeconds / double(r.gpus);
      out.ranked.emplace_back(index, std::move(c));
      continue;
    }
    double gpuSeconds = e->iterationSeconds * double(r.gpus);
    if (gpuSeconds > 0) {
      c.mfu = 3 * e->forwardFlops / (gpuSeconds * r.device.matmulFlops);
      c.tokensPerSecondPerGpu = e->tokens / gpuSeconds;
    }
    best.add(e->iterationSeconds);
    out.ranked.emplace_back(index, std::move(c));
  }
  // In the plan space's order, as an exhaustive search finds them.
  llvm::sort(out.ranked,
             [](const auto &a, const auto &b) { return a.first < b.first; });
  out.evaluateSeconds += threadSeconds() - evaluateStart;
  return true;
}

/// Compiles the shape of `members` once and evaluates each member under
/// its own degrees and M, in the order given (their lower bounds'), but
/// those `best` (with the shape's own plans added) excludes. A member
/// whose sizes do not divide on that step gets a step of its own: ZeRO
/// shards a weight along the first dimension its data-parallel group
/// divides, which depends on the degrees (o_proj's `Dh` for some, `D` for
/// others), so the representative's step may not hold it.
static void searchShape(ModuleOp model, const SearchRequest &r,
                        ArrayRef<size_t> members,
                        const std::vector<Plan> &plans,
                        const PlanBounds &bounds, BestTimes best,
                        ShapeOutcome &out) {
  std::vector<size_t> pending(members.begin(), members.end());
  while (!pending.empty()) {
    const Plan &representative = getRepresentative(pending, plans);
    std::vector<size_t> own;
    if (!searchStep(model, r, representative, pending, plans, bounds, best, out,
                    own))
      return;
    pending = std::move(own);
  }
}

/// A lower bound of the iteration of `p`, whose stages are busy `work`
/// seconds in all with what no schedule hides (summed over them).
static double getScheduleBound(double work, const Plan &p) {
  double perStage = work / double(p.pp);
  if ((p.schedule != "1f1b" && p.schedule != "gpipe") || p.pp == 1 ||
      p.virtualStages != 1)
    return perStage;
  // Stage k's first step, a forward, waits for that micro-batch's forward
  // through the stages before it; its last, a whole backward, is followed
  // by that micro-batch's backward through them: T >= P_k + M w_k, with
  // w_k the stage's work per micro-batch and P_k that of the stages before
  // it. The least T any split of the work W over pp stages allows is
  // W / M / (1 - (1 - 1/M)^pp).
  double m = double(p.microBatches);
  return std::max(perStage, work / m / (1 - std::pow(1 - 1 / m, double(p.pp))));
}

/// The lower bounds of each plan's iteration and peak among `candidates`
/// (docs/Explore.md): its step compiled without a pipeline (pp = 1, 1F1B),
/// once per shape of such steps; what no schedule hides of that step
/// (report::estimateStagesWork), over pp; and from one layer's share of it
/// and `pipelines`' split, the fill and the stages' memory. A plan whose
/// bound cannot be computed keeps 0.
static void getPlanBounds(ModuleOp model, const SearchRequest &r,
                          const ModelLimits &limits,
                          const std::vector<Plan> &plans,
                          ArrayRef<size_t> candidates, unsigned threads,
                          PipelineLayers &pipelines, PlanBounds &bounds,
                          SearchResult &result) {
  // The plan's own step but for the pipeline. (Not also ZeRO 0 for every
  // stage: ZeRO 2 and 3 accumulate each micro-batch's gradients on a
  // shard, so their backward computes less than ZeRO 0's.)
  auto unpipelined = [](Plan p) {
    p.pp = 1;
    p.schedule = "1f1b";
    p.virtualStages = 1;
    return p;
  };
  std::vector<std::vector<size_t>> groups = groupBy(candidates, [&](size_t i) {
    return getShapeKey(unpipelined(plans[i]), limits);
  });
  std::vector<double> seconds(groups.size(), 0.0);
  parallelFor(groups.size(), threads, [&](size_t g) {
    double start = threadSeconds();
    const std::vector<size_t> &members = groups[g];
    FirstError quiet;
    FailureOr<OwningOpRef<ModuleOp>> step =
        compilePlan(model, r, unpipelined(getRepresentative(members, plans)));
    if (succeeded(step)) {
      sym::Bindings stepBindings = *getModuleBindings(**step);
      SymbolicCache cache;
      std::optional<LayerStack> stack = findLayerStack(**step);
      // Plans that differ in their pipeline share the degrees' work and
      // layer profile.
      std::map<std::array<int64_t, 5>,
               std::pair<double, std::optional<LayerProfile>>>
          work;
      for (size_t i : members) {
        const Plan &p = plans[i];
        std::array<int64_t, 5> key{p.dp, p.tp, p.cp, p.ep, p.microBatches};
        auto it = work.find(key);
        if (it == work.end()) {
          sym::Bindings b = planBindings(stepBindings, unpipelined(p));
          FailureOr<report::StagesWork> w =
              report::estimateStagesWork(**step, b, r.device);
          std::pair<double, std::optional<LayerProfile>> entry{0.0,
                                                               std::nullopt};
          if (succeeded(w))
            entry = {w->total(),
                     stack ? getLayerProfile(**step, *stack, b, r.device, *w)
                           : std::nullopt};
          it = work.emplace(key, std::move(entry)).first;
        }
        const auto &[total, layer] = it->second;
        bounds.iteration[i] = getScheduleBound(total, p);
        if (layer) {
          bounds.iteration[i] = std::max(bounds.iteration[i],
                                         pipelines.iterationBound(p, *layer));
          bounds.peak[i] = pipelines.peakBound(p, *layer);
        }
      }
    }
    seconds[g] = threadSeconds() - start;
  });
  for (double s : seconds)
    result.boundSeconds += s;
  result.boundShapes = int64_t(groups.size());
}

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
    return model.emitError("the model has no function to ")
           << (r.serving ? "serve" : "train");

  SpaceOptions so;
  so.gpus = r.gpus;
  so.constraints = r.constraints;
  so.maxVirtualStages = r.maxVirtualStages;
  so.serving = r.serving;
  so.decodeTokens = r.decodeTokens;
  ModelLimits limits = getModelLimits(model, bindings);
  PlanSpace space = enumeratePlans(limits, so);
  const std::vector<Plan> &plans = space.plans;
  SearchResult result;
  result.enumerated = int64_t(plans.size());
  result.excluded = space.excluded;

  ErrorRouting routing(model.getContext());
  // Plans whose model states cannot fit are ruled out before compiling.
  std::optional<StatesBound> bound;
  if (!plans.empty() && !r.serving)
    bound = getStatesBound(model, r);
  std::vector<size_t> candidates;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (bound && bound->of(plans[i]) > r.device.memoryCapacity) {
      ++result.statesBoundOver;
      int64_t atLeast = int64_t(bound->of(plans[i]));
      if (!result.smallestBoundOver || atLeast < result.smallestBoundOver)
        result.smallestBoundOver = atLeast;
      continue;
    }
    candidates.push_back(i);
  }
  unsigned threads =
      r.threads ? r.threads : std::max(1u, std::thread::hardware_concurrency());

  // Training plans that cannot be among the best `exactTop` are found by a
  // lower bound of their iteration,
  bool bounded = !r.serving && r.exactTop > 0;
  PlanBounds bounds{std::vector<double>(plans.size(), 0.0),
                    std::vector<double>(plans.size(), 0.0)};
  if (!r.serving) {
    // And those whose pipeline's layers cannot fit, by a lower bound of
    // their peak.
    PipelineLayers pipelines(model, bindings);
    {
      FirstError quiet;
      pipelines.splitAll(plans, candidates);
    }
    getPlanBounds(model, r, limits, plans, candidates, threads, pipelines,
                  bounds, result);
    llvm::erase_if(candidates, [&](size_t i) {
      if (bounds.peak[i] <= r.device.memoryCapacity)
        return false;
      ++result.peakBoundOver;
      int64_t atLeast = int64_t(bounds.peak[i]);
      if (!result.smallestPeakBoundOver ||
          atLeast < result.smallestPeakBoundOver)
        result.smallestPeakBoundOver = atLeast;
      return true;
    });
  }

  // Shapes in the order their first plan was enumerated; each shape's
  // plans by their bounds.
  std::vector<std::vector<size_t>> members = groupBy(
      candidates, [&](size_t i) { return getShapeKey(plans[i], limits); });
  result.shapes = int64_t(members.size());
  std::vector<size_t> byBound(members.size());
  for (size_t s = 0; s < members.size(); ++s) {
    llvm::stable_sort(members[s], [&](size_t a, size_t b) {
      return bounds.iteration[a] < bounds.iteration[b];
    });
    byBound[s] = s;
  }
  llvm::stable_sort(byBound, [&](size_t a, size_t b) {
    return bounds.iteration[members[a].front()] <
           bounds.iteration[members[b].front()];
  });

  // Shapes compile and evaluate in rounds of a fixed size (in parallel),
  // the most promising first, each with the best times of the rounds
  // before it: so which plans are evaluated, and the outcomes merged in
  // shape order, do not depend on the threads.
  std::vector<ShapeOutcome> outcomes(members.size());
  std::mutex progressMutex;
  SearchProgress sp;
  sp.shapes = result.shapes;
  BestTimes best{size_t(bounded ? r.exactTop : 0), {}};
  size_t roundSize = bounded ? 8 : byBound.size();
  size_t next = 0;
  while (next < byBound.size() &&
         !best.excludes(bounds.iteration[members[byBound[next]].front()])) {
    std::vector<size_t> round;
    while (next < byBound.size() && round.size() < roundSize &&
           !best.excludes(bounds.iteration[members[byBound[next]].front()]))
      round.push_back(byBound[next++]);
    parallelFor(round.size(), threads, [&](size_t i) {
      size_t s = round[i];
      searchShape(model, r, members[s], plans, bounds, best, outcomes[s]);
      std::lock_guard<std::mutex> lock(progressMutex);
      ++sp.shapesDone;
      sp.evaluated += outcomes[s].evaluated;
      sp.fitting += int64_t(outcomes[s].ranked.size());
      if (progress)
        progress(sp);
    });
    for (size_t s : round)
      for (const auto &ranked : outcomes[s].ranked)
        best.add(ranked.second.estimate.iterationSeconds);
  }
  for (; next < byBound.size(); ++next) {
    ++result.shapesSkipped;
    result.boundSkipped += int64_t(members[byBound[next]].size());
  }

  for (ShapeOutcome &o : outcomes) {
    for (auto &[why, n] : o.excluded)
      result.excluded[why] += n;
    result.evaluated += o.evaluated;
    result.boundSkipped += o.boundSkipped;
    result.statesOver += o.statesOver;
    result.activationsOver += o.activationsOver;
    result.overLatency += o.overLatency;
    if (o.smallestTpotOver && (!result.smallestTpotOver ||
                               o.smallestTpotOver < result.smallestTpotOver))
      result.smallestTpotOver = o.smallestTpotOver;
    if (o.smallestPeakOver && (!result.smallestPeakOver ||
                               o.smallestPeakOver < result.smallestPeakOver))
      result.smallestPeakOver = o.smallestPeakOver;
    result.compileSeconds += o.compileSeconds;
    result.evaluateSeconds += o.evaluateSeconds;
    result.firstPlanSeconds += o.firstPlanSeconds;
    for (auto &ranked : o.ranked)
      result.ranked.push_back(std::move(ranked.second));
  }
  // Training: the shortest iteration first; serving: the most decode
  // tokens per second per GPU (under the latency bound), then the shortest
  // time per output token.
  std::stable_sort(
      result.ranked.begin(), result.ranked.end(),
      [](const Candidate &a, const Candidate &b) {
        if (a.estimate.serving) {
          if (a.tokensPerSecondPerGpu != b.tokensPerSecondPerGpu)
            return a.tokensPerSecondPerGpu > b.tokensPerSecondPerGpu;
          if (a.estimate.tpotSeconds != b.estimate.tpotSeconds)
            return a.estimate.tpotSeconds < b.estimate.tpotSeconds;
        } else if (a.estimate.iterationSeconds != b.estimate.iterationSeconds) {
          return a.estimate.iterationSeconds < b.estimate.iterationSeconds;
        }
        return a.estimate.peakBytes < b.estimate.peakBytes;
      });
  return result;
}
