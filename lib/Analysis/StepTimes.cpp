//===- StepTimes.cpp - What a schedule's steps take -----------------------===//

#include "Stage/Analysis/StepTimes.h"

#include "Stage/Analysis/BackwardSplit.h"
#include "Stage/Analysis/CommAnalysis.h"

using namespace mlir;
using namespace mlir::stage;

/// Whether every group over `axes` stays inside one node of `perNode`
/// devices: the grid numbers ranks with its last axis fastest, so rank 0's
/// group reaches rank sum (d_a - 1) stride_a, and every group lies in an
/// aligned block of the outermost group axis' stride x degree ranks, which
/// must tile the nodes.
static bool staysInNode(GridOp grid, ArrayAttr axes, const sym::Bindings &b,
                        int64_t perNode) {
  int64_t stride = 1, farthest = 0, block = 1;
  for (Attribute a : llvm::reverse(grid.getAxes())) {
    StringRef axis = cast<StringAttr>(a).getValue();
    auto it = b.find(axis.str());
    int64_t d = it == b.end() ? 1 : it->second;
    bool member = llvm::is_contained(axes, a);
    if (member && d > 1) {
      farthest += (d - 1) * stride;
      block = stride * d;
    }
    stride *= d;
  }
  return farthest < perNode && perNode % block == 0;
}

/// The ring steps of one execution: each a message whose latency adds up.
static int64_t ringSteps(Operation *op, int64_t n) {
  if (isa<SendOp>(op))
    return 1;
  if (isa<AllReduceOp>(op))
    return 2 * (n - 1);
  if (isa<AllGatherOp, ReduceScatterOp, AllToAllOp>(op))
    return n - 1;
  return 0;
}

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
  // The executions, evaluated level by level.
  auto executions = [&]() -> FailureOr<double> {
    sym::Result<double> runs = n.countUnder(b);
    if (!runs)
      return op->emitError("time estimate: ") << runs.error();
    return *runs;
  };
  // Over all executions: without a step's sum, the count times one run's
  // (evaluated apart, which spares building the product).
  auto total = [&](const sym::Expr &perRun) -> FailureOr<double> {
    if (!n.isProduct())
      return value(n.of(perRun));
    FailureOr<double> one = value(perRun);
    if (failed(one) || *one == 0)
      return one;
    FailureOr<double> runs = executions();
    if (failed(runs))
      return failure();
    return *one * *runs;
  };
  if (auto comm = dyn_cast<CollectiveOpInterface>(op)) {
    FailureOr<double> bytes = total(getSentBytes(comm));
    if (failed(bytes))
      return failure();
    if (*bytes == 0)
      return 0.0;
    FailureOr<double> runs = executions();
    if (failed(runs))
      return failure();
    // The group's size: the product of its axes' degrees.
    double size = 1;
    for (Attribute axis : comm.getAxesAttr()) {
      auto it = b.find(cast<StringAttr>(axis).str());
      if (it == b.end()) {
        FailureOr<double> symbolic = value(comm.getGroupSize());
        if (failed(symbolic))
          return failure();
        size = *symbolic;
        break;
      }
      size *= double(it->second);
    }
    auto grid =
        SymbolTable::lookupNearestSymbolFrom<GridOp>(op, comm.getGridAttr());
    bool inNode =
        !grid || staysInNode(grid, comm.getAxesAttr(), b, d.gpusPerNode);
    double bandwidth = inNode ? d.linkBytes : d.networkBytes;
    if (d.ringAllToAll && isa<AllToAllOp>(op))
      bandwidth /= size / 2;
    return *bytes / bandwidth +
           *runs * double(ringSteps(op, int64_t(size))) * d.latency;
  }
  auto c = dyn_cast<CostOpInterface>(op);
  if (!c)
    return 0.0;
  Cost cost = getOpCost(c);
  FailureOr<double> contraction = total(cost.contractionFlops);
  FailureOr<double> other = total(cost.otherFlops);
  FailureOr<double> bytes = total(cost.bytes);
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
