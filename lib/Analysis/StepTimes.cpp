//===- StepTimes.cpp - What a schedule's steps take -----------------------===//

#include "Stage/Analysis/StepTimes.h"

#include "Stage/Analysis/BackwardSplit.h"
#include "Stage/Analysis/CommAnalysis.h"

using namespace mlir;
using namespace mlir::stage;

FailureOr<double> mlir::stage::getRooflineSeconds(Operation *op,
                                                  const Multiplicity &n,
                                                  const sym::Bindings &b,
                                                  const DeviceModel &d) {
  auto value = [&](const sym::Expr &e) -> FailureOr<double> {
    sym::Result<sym::Rational> v = e.evaluateRational(b);
    if (!v)
      return op->emitError("time estimate: ") << v.error();
    return v->toDouble();
  };
  if (auto comm = dyn_cast<CollectiveOpInterface>(op)) {
    FailureOr<double> bytes = value(n.of(getSentBytes(comm)));
    if (failed(bytes))
      return failure();
    return *bytes / d.linkBytes;
  }
  auto c = dyn_cast<CostOpInterface>(op);
  if (!c)
    return 0.0;
  Cost cost = n.of(c.getCost());
  FailureOr<double> contraction = value(cost.contractionFlops);
  FailureOr<double> other = value(cost.otherFlops);
  FailureOr<double> bytes = value(cost.bytes);
  if (failed(contraction) || failed(other) || failed(bytes))
    return failure();
  return d.seconds(*contraction, *other, *bytes);
}

LogicalResult
mlir::stage::walkRooflineSeconds(Operation *root, const sym::Bindings &b,
                                 const DeviceModel &d,
                                 function_ref<void(Operation *, double)> fn) {
  bool bad = false;
  walkWithCounts(root, [&](Operation *op, const Multiplicity &n) {
    if (bad)
      return;
    FailureOr<double> sec = getRooflineSeconds(op, n, b, d);
    if (failed(sec))
      bad = true;
    else
      fn(op, *sec);
  });
  return failure(bad);
}

FailureOr<std::vector<StepWeights>>
mlir::stage::getStepTimes(func::FuncOp fn, const StepStructure &s,
                          const sym::Bindings &b, const DeviceModel &d) {
  int64_t chunks = 0;
  for (const RankClass &c : s.classes)
    chunks += int64_t(c.chunks.size());
  std::vector<StepWeights> times(chunks, StepWeights{0, 0, 0});
  for (const RankClass &c : s.classes)
    for (auto [op, id] : llvm::zip(c.chunks, c.chunkIds)) {
      MicrobatchesOp loop = getMicrobatches(op);
      if (!loop)
        continue;
      BackwardSplit split(loop);
      StepWeights &t = times[id];
      // The loop's regions are one micro-batch's steps.
      if (failed(
              walkRooflineSeconds(loop, b, d, [&](Operation *op, double sec) {
                if (getPhase(op) == Phase::Forward)
                  t.forward += sec;
                else if (split.isWeightGrad(op))
                  t.weightGrad += sec;
                else
                  t.inputGrad += sec;
              })))
        return failure();
    }
  return times;
}

FailureOr<ScheduleShape> mlir::stage::getScheduleShape(func::FuncOp fn,
                                                       const StepStructure &s,
                                                       const sym::Bindings &b) {
  ScheduleShape shape{s.kind, s.stages, s.virtualStages, 1};
  sym::Result<int64_t> M = s.microBatches.evaluate(b);
  if (!M)
    return fn.emitError("micro-batch count: ") << M.error();
  shape.microBatches = *M;
  if (s.kind == ScheduleKind::zb_v) {
    FailureOr<std::vector<StepWeights>> times =
        getStepTimes(fn, s, b, *getDevicePreset("h100"));
    if (failed(times))
      return failure();
    shape.weights = std::move(*times);
  }
  return shape;
}
