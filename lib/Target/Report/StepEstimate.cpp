//===- StepEstimate.cpp - A training step's peak and time -----------------===//

#include "Stage/Target/Report/StepEstimate.h"

#include "ReportModel.h"
#include "ReportSections.h"

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Analysis/RankClasses.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

FailureOr<StepEstimate>
mlir::stage::report::estimateStep(ModuleOp module, const sym::Bindings &b,
                                  const DeviceModel &device,
                                  double timeOnlyWithin) {
  ReportRequest request;
  request.device = device;
  request.numbersOnly = true;
  request.timeOnlyWithin = timeOnlyWithin;
  FailureOr<Report> r = buildReport(module, b, request);
  if (failed(r))
    return failure();
  if (!r->job || r->stages.empty())
    return module.emitError("expected a partitioned training step or "
                            "serving program");
  StepEstimate e;
  e.serving = r->job->serving;
  for (const StageReport &s : r->stages) {
    int64_t peak =
        s.find("memory")->find("peak")->value.ceilToInt64().value_or(INT64_MAX);
    if (peak > e.peakBytes) {
      e.peakBytes = peak;
      e.peakStage = s.stage;
      const Section *memory = s.find("memory");
      const Quantity *states =
          memory->find(e.serving ? "weights" : "model_states");
      e.modelStatesBytes = states->value.ceilToInt64().value_or(INT64_MAX);
      auto bytes = [&](StringRef key) {
        const Quantity *q = memory->find(key);
        return q ? q->value.toDouble() : 0.0;
      };
      e.weightBytes = bytes("weights");
      e.gradientBytes = bytes("gradients");
      e.optimizerBytes = bytes("master_weights") + bytes("optimizer_moments");
      e.parameters = bytes("parameters");
    }
  }
  const Section *time = r->findTotal("job_time");
  auto seconds = [&](StringRef key) {
    const Quantity *q = time ? time->find(key) : nullptr;
    return q ? q->value.toDouble() : 0.0;
  };
  if (e.serving) {
    e.ttftSeconds = seconds("ttft");
    e.tpotSeconds = seconds("tpot");
    e.iterationSeconds = seconds("total");
    return e;
  }
  e.iterationSeconds = seconds("iteration");
  e.forwardFlops = r->jobForwardFlops;
  if (b.count("B") && b.count("S"))
    e.tokens = double(b.at("B")) * double(b.at("S"));
  return e;
}

FailureOr<StagesWork>
mlir::stage::report::estimateStagesWork(ModuleOp module, const sym::Bindings &b,
                                        const DeviceModel &device) {
  func::FuncOp step;
  for (auto fn : module.getOps<func::FuncOp>())
    if (isTrainingStep(module, fn))
      step = fn;
  std::shared_ptr<const StepStructure> structure =
      step ? getStepStructure(step) : nullptr;
  if (!structure || structure->serving)
    return module.emitError("expected a partitioned training step");
  SymbolicCache::Evaluation evaluating(b);
  StagesWork work;
  for (const RankClass &cls : structure->classes)
    for (Operation *chunk : cls.chunks) {
      FailureOr<PhaseTimes> t = phaseTimes(chunk, b, device);
      if (failed(t))
        return failure();
      for (auto [kind, phases] :
           llvm::enumerate(std::array<std::vector<Phase>, 2>{
               {{Phase::Forward}, {Phase::Backward, Phase::Recompute}}}))
        for (Phase p : phases) {
          work.compute[kind] += t->compute[unsigned(p)];
          work.comm[kind] += t->comm[unsigned(p)];
          work.zero3[kind] += t->zero3[unsigned(p)];
        }
      // The reductions after the loop are counted in the forward's.
      work.comm[0] -= t->reductions;
    }
  return work;
}
