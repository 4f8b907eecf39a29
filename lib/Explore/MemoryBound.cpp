//===- MemoryBound.cpp - A lower bound of a plan's peak memory ------------===//

#include "MemoryBound.h"

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

std::optional<LayerMemory>
mlir::stage::explore::getLayerMemory(ModuleOp step, const sym::Bindings &b) {
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
  const std::string &layers = *symbols.begin();
  auto it = b.find(layers);
  if (it == b.end() || it->second < 3)
    return std::nullopt;
  FailureOr<std::vector<StageMemory>> memory = analyzeMemory(fn, b);
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
  std::optional<double> states = perLayer(m.modelStates());
  std::optional<double> kept = perLayer(m.chunks.front().keptPerMicrobatch);
  if (!states || !kept)
    return std::nullopt;
  return LayerMemory{*states, *kept};
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
      StepStructure s = getStepStructure(fn);
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
  std::vector<std::vector<PipelineStep>> orders = getStageSchedules(shape);
  for (auto [stage, order] : llvm::enumerate(orders)) {
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
  }
  return &out;
}

double PipelineLayers::peakBound(const Plan &p, const LayerMemory &layer) {
  if (p.pp == 1)
    return 0;
  const std::vector<StageLayers> *s = getStages(p);
  if (!s)
    return 0;
  double peak = 0;
  for (const StageLayers &stage : *s)
    peak = std::max(peak, double(stage.held) * layer.states +
                              double(stage.mostKept) * layer.keptPerMicrobatch);
  return peak;
}
