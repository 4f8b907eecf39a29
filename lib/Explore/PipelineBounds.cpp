//===- PipelineBounds.cpp - Bounds of a plan from its pipeline ------------===//

#include "PipelineBounds.h"

#include "Stage/Analysis/MemoryAnalysis.h"
#include "Stage/Analysis/PipelineSchedule.h"
#include "Stage/Analysis/RankClasses.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::explore;

std::optional<LayerStack> mlir::stage::explore::findLayerStack(ModuleOp step) {
  func::FuncOp fn;
  std::optional<sym::Expr> count;
  bool oneStack = true;
  step.walk([&](func::FuncOp f) {
    f.walk([&](Operation *op) {
      if (isa<MicrobatchesOp>(op))
        fn = f;
      // The forward's stacks and their backward copies: one count.
      if (auto rep = dyn_cast<RepeatOp>(op)) {
        sym::Expr n = rep.getCount().getValue();
        if (count && !(*count == n))
          oneStack = false;
        count = n;
      }
    });
  });
  if (!fn || !count || !oneStack)
    return std::nullopt;
  std::set<std::string> symbols = count->symbols();
  if (symbols.size() != 1 || !(*count == sym::Expr::symbol(*symbols.begin())))
    return std::nullopt;
  return LayerStack{fn, *symbols.begin()};
}

std::optional<LayerProfile> mlir::stage::explore::getLayerProfile(
    ModuleOp step, const LayerStack &stack, const sym::Bindings &b,
    const DeviceModel &device, const report::StagesWork &work) {
  const std::string &layers = stack.count;
  auto it = b.find(layers);
  if (it == b.end() || it->second < 3)
    return std::nullopt;
  FailureOr<std::vector<StageMemory>> memory = analyzeMemory(stack.step, b, device);
  if (failed(memory) || memory->size() != 1 ||
      memory->front().chunks.size() != 1)
    return std::nullopt;
  const StageMemory &m = memory->front();
  // The states and kept activations with L, L - 1 and L - 2 layers: per
  // layer, the difference, when both differences agree (exact rationals).
  auto perLayer = [&](const sym::Expr &e) -> std::optional<double> {
    sym::Rational v[3];
    for (int i = 0; i < 3; ++i) {
      sym::Bindings fewer = b;
      fewer[layers] = it->second - i;
      sym::Result<sym::Rational> r = e.evaluateRational(fewer);
      if (!r)
        return std::nullopt;
      v[i] = *r;
    }
    sym::Rational d = v[0] - v[1];
    if (!(d == v[1] - v[2]) || d.isNegative())
      return std::nullopt;
    return d.toDouble();
  };
  std::optional<double> states = perLayer(m.exprs->modelStates);
  std::optional<double> kept = perLayer(m.exprs->keptPerMicrobatch.front());
  if (!states || !kept)
    return std::nullopt;
  LayerProfile layer{*states, *kept};
  layer.layers = it->second;
  // The work with one layer fewer: a chunk of n layers has at least n times
  // each difference (its layers run the same ops), so its step at least n
  // times (comm - zero3) + max(compute, zero3) of them, per micro-batch.
  sym::Bindings fewer = b;
  fewer[layers] = it->second - 1;
  FailureOr<report::StagesWork> less =
      report::estimateStagesWork(step, fewer, device);
  auto M = b.find("M");
  if (failed(less) || M == b.end() || M->second < 1)
    return layer;
  double seconds[2];
  for (unsigned kind : {0u, 1u}) {
    double compute = work.compute[kind] - less->compute[kind];
    double comm = work.comm[kind] - less->comm[kind];
    double zero3 = work.zero3[kind] - less->zero3[kind];
    // (comm holds zero3.)
    if (compute < 0 || zero3 < 0 || comm < zero3)
      return layer;
    seconds[kind] =
        (comm - zero3 + std::max(compute, zero3)) / double(M->second);
  }
  layer.forward = seconds[0];
  layer.backward = seconds[1];
  return layer;
}

void PipelineLayers::splitAll(const std::vector<Plan> &plans,
                              ArrayRef<size_t> candidates) {
  for (size_t i : candidates) {
    const Plan &p = plans[i];
    auto [at, added] =
        splits.try_emplace(std::make_tuple(p.pp, p.schedule, p.virtualStages));
    if (!added || p.pp == 1)
      continue;
    Split &split = at->second;
    OwningOpRef<ModuleOp> copy = model.clone();
    setModuleBindings(*copy, bindings);
    PassManager pm(model.getContext());
    StagePipelineOptions o;
    o.pp = p.pp;
    o.schedule = p.schedule;
    o.virtualStages = p.virtualStages;
    pm.addPass(createStagePipeline(o));
    if (failed(pm.run(*copy)))
      continue;
    copy->walk([&](func::FuncOp fn) {
      if (fn.getBody().front().getOps<PipelineOp>().empty())
        return;
      std::shared_ptr<const StepStructure> structure = getStepStructure(fn);
      const StepStructure &s = *structure;
      split.virtualStages = s.virtualStages;
      for (const RankClass &cls : s.classes)
        for (auto [id, range] : llvm::zip(cls.chunkIds, cls.layers)) {
          if (id >= int64_t(split.layers.size())) {
            split.layers.resize(id + 1, 0);
            split.stage.resize(id + 1, -1);
          }
          split.layers[id] = range.second - range.first;
          split.stage[id] = cls.stage;
        }
    });
  }
}

const std::vector<StageLayers> *PipelineLayers::getStages(const Plan &p) {
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_tuple(p.pp, p.schedule, p.virtualStages, p.microBatches);
  auto found = stages.find(key);
  if (found != stages.end())
    return found->second.empty() ? nullptr : &found->second;
  std::vector<StageLayers> &out = stages[key];
  auto at = splits.find(std::make_tuple(p.pp, p.schedule, p.virtualStages));
  if (at == splits.end())
    return nullptr;
  const Split &split = at->second;
  std::optional<ScheduleKind> kind = symbolizeScheduleKind(p.schedule);
  if (split.layers.empty() || !kind)
    return nullptr;
  ScheduleShape shape{*kind, p.pp, split.virtualStages, p.microBatches};
  if (!checkSchedule(shape).empty())
    return nullptr;
  out.assign(p.pp, StageLayers());
  for (auto [c, n] : llvm::enumerate(split.layers)) {
    if (split.stage[c] < 0 || split.stage[c] >= p.pp) {
      out.clear();
      return nullptr;
    }
    out[split.stage[c]].held += n;
  }
  // A micro-batch passes the chunks in order (DualPipe's copies aside);
  // a stage's first chunk waits for the chunks before it.
  std::vector<int64_t> firstChunk(p.pp, -1);
  for (auto [c, stage] : llvm::enumerate(split.stage))
    if (firstChunk[stage] < 0)
      firstChunk[stage] = int64_t(c);
  if (!isMirrored(*kind))
    for (auto [stage, s] : llvm::enumerate(out))
      for (int64_t c = 0; c < firstChunk[stage]; ++c)
        s.before += split.layers[c];
  if (*kind == ScheduleKind::zb_v) {
    // ZB-V plans its order from the steps' times, which only the compiled
    // shape knows; but in any order, a rank's later chunk runs micro-batch
    // 0's forward while its earlier chunk keeps that micro-batch's
    // activations (until its input gradient, which comes after the later
    // chunk's): one micro-batch of all its layers.
    for (StageLayers &s : out)
      s.mostKept = s.held;
    return &out;
  }
  std::shared_ptr<const StageOrders> orders = getStageSchedules(shape);
  for (auto [stage, order] : llvm::enumerate(*orders)) {
    StageLayers &s = out[stage];
    // Activations live from a forward to its input gradient (or whole
    // backward); what a split backward keeps for its weight gradients is
    // left out, so this is at most the memory analysis's.
    int64_t live = 0;
    for (const PipelineStep &step : order) {
      if (step.chunk < 0 || step.chunk >= int64_t(split.layers.size())) {
        out.clear();
        return nullptr;
      }
      int64_t n = split.layers[step.chunk];
      if (step.isForward())
        live += n;
      else if (step.kind != StepKind::WeightGrad)
        live -= n;
      s.mostKept = std::max(s.mostKept, live);
    }
    s.endsWithFirstChunk = !order.empty() &&
                           order.back().kind == StepKind::Backward &&
                           order.back().chunk == firstChunk[stage] &&
                           order.back().microbatch == p.microBatches - 1;
  }
  return &out;
}

double PipelineLayers::peakBound(const Plan &p, const LayerProfile &layer) {
  if (p.pp == 1)
    return 0;
  const std::vector<StageLayers> *s = getStages(p, layer.layers);
  if (!s)
    return 0;
  double peak = 0;
  for (const StageLayers &stage : *s)
    peak = std::max(peak, double(stage.held) * layer.states +
                              double(stage.mostKept) * layer.keptPerMicrobatch);
  return peak;
}

double PipelineLayers::iterationBound(const Plan &p,
                                      const LayerProfile &layer) {
  std::optional<ScheduleKind> kind = symbolizeScheduleKind(p.schedule);
  if (p.pp == 1 || !kind || isMirrored(*kind))
    return 0;
  const std::vector<StageLayers> *s = getStages(p, layer.layers);
  if (!s)
    return 0;
  // Stage k starts once a micro-batch's forward has passed the layers
  // before it, runs all its steps one after another (M micro-batches'
  // forward and backward of its layers), and, when its last step is its
  // first chunk's backward of the last micro-batch, that backward still
  // passes the layers before it.
  double bound = 0, m = double(p.microBatches);
  for (const StageLayers &stage : *s)
    bound = std::max(
        bound,
        double(stage.before) * layer.forward +
            m * double(stage.held) * (layer.forward + layer.backward) +
            (stage.endsWithFirstChunk ? double(stage.before) * layer.backward
                                      : 0));
  return bound;
}

const std::vector<StageLayers> *PipelineLayers::getStages(const Plan &p,
                                                          int64_t layers) {
  const std::vector<StageLayers> *s = getStages(p);
  if (!s)
    return nullptr;
  int64_t held = 0;
  for (const StageLayers &stage : *s)
    held += stage.held;
  // DualPipe's ranks hold two stages each: its stages' layers count twice.
  std::optional<ScheduleKind> kind = symbolizeScheduleKind(p.schedule);
  return held == (kind && isMirrored(*kind) ? 2 : 1) * layers ? s : nullptr;
}
