//===- StepTimes.cpp - What a schedule's steps take -----------------------===//

#include "Stage/Analysis/StepTimes.h"

#include "Stage/Analysis/BackwardSplit.h"
#include "Stage/Analysis/CommAnalysis.h"
#include "Stage/Analysis/ExpertRouting.h"
#include "Stage/Support/TimeModel.h"

#include <cmath>

using namespace mlir;
using namespace mlir::stage;

/// Whether every group stays inside one node of `perNode` devices, given
/// the grid's axes last first as (degree, in the group): the grid numbers
/// ranks with its last axis fastest, so rank 0's group reaches rank
/// sum (d_a - 1) stride_a, and every group lies in an aligned block of the
/// outermost group axis' stride x degree ranks, which must tile the nodes.
static bool groupStaysInNode(ArrayRef<std::pair<int64_t, bool>> axesLastFirst,
                             int64_t perNode) {
  int64_t stride = 1, farthest = 0, block = 1;
  for (auto [d, member] : axesLastFirst) {
    if (member && d > 1) {
      farthest += (d - 1) * stride;
      block = stride * d;
    }
    stride *= d;
  }
  return farthest < perNode && perNode % block == 0;
}

/// How a group of `size` members over the grid's axes (last first, as
/// (degree, in the group)) sits on nodes of `perNode`: all in one, or so
/// many per node (one, where the groups do not tile the nodes alike).
static ::stage::GroupSpan
groupSpan(ArrayRef<std::pair<int64_t, bool>> axesLastFirst, double size,
          int64_t perNode) {
  if (groupStaysInNode(axesLastFirst, perNode))
    return {size, size};
  double r = ::stage::membersPerNode(axesLastFirst.data(), axesLastFirst.size(),
                                     perNode);
  return {size, r < size ? r : 1};
}

/// The grid's axes last first, as (degree under `b`, in the group of
/// `axes`; an unbound axis has degree 1).
static SmallVector<std::pair<int64_t, bool>>
gridAxesLastFirst(GridOp grid, ArrayAttr axes, const sym::Bindings &b) {
  SmallVector<std::pair<int64_t, bool>> lastFirst;
  for (Attribute a : llvm::reverse(grid.getAxes())) {
    auto it = b.find(cast<StringAttr>(a).str());
    lastFirst.push_back(
        {it == b.end() ? 1 : it->second, llvm::is_contained(axes, a)});
  }
  return lastFirst;
}

/// The time model's name of a collective op.
static ::stage::CollectiveKind collectiveKind(Operation *op) {
  using ::stage::CollectiveKind;
  if (isa<SendOp>(op))
    return CollectiveKind::Send;
  if (isa<AllReduceOp>(op))
    return CollectiveKind::AllReduce;
  if (isa<AllGatherOp>(op))
    return CollectiveKind::AllGather;
  if (isa<ReduceScatterOp>(op))
    return CollectiveKind::ReduceScatter;
  return CollectiveKind::AllToAll;
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
  // Routing: the busiest rank's tokens, the experts reached.
  std::optional<RoutedOp> routed = getRoutedOp(op);
  if (auto comm = dyn_cast<CollectiveOpInterface>(op)) {
    FailureOr<double> bytes = total(getSentBytes(comm));
    if (failed(bytes))
      return failure();
    if (*bytes == 0)
      return 0.0;
    FailureOr<double> runs = executions();
    if (failed(runs))
      return failure();
    if (routed) {
      double none = 0;
      RoutingModel(op).applyUnder(b, *routed, *runs, none, none, *bytes);
    }
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
    ::stage::GroupSpan span =
        grid ? groupSpan(gridAxesLastFirst(grid, comm.getAxesAttr(), b), size,
                         d.gpusPerNode)
             : ::stage::GroupSpan{size, size};
    return ::stage::collectiveSeconds(collectiveKind(op), *bytes, span, *runs,
                                      d);
  }
  auto c = dyn_cast<CostOpInterface>(op);
  if (!c)
    return 0.0;
  Cost cost = getOpCost(c);
  FailureOr<double> contraction = total(cost.contractionFlops);
  FailureOr<double> other = total(cost.otherFlops);
  FailureOr<double> bytes = total(cost.bytes);
  FailureOr<double> runs = executions();
  if (failed(contraction) || failed(other) || failed(bytes) || failed(runs))
    return failure();
  ::stage::MatmulShape shape;
  if (std::optional<MatmulGrid> g = getMatmulGrid(op)) {
    FailureOr<double> rows = value(g->rows), columns = value(g->columns),
                      batch = value(g->batch);
    if (failed(rows) || failed(columns) || failed(batch))
      return failure();
    shape = {*rows, *columns, *batch};
  }
  if (routed)
    RoutingModel(op).applyUnder(b, *routed, *runs, *contraction, *other,
                                *bytes);
  return ::stage::kernelSeconds(*contraction, *other, *bytes, *runs, d, shape);
}

namespace {
/// The roofline terms of every op under a root, compiled once while a
/// SymbolicCache lives and evaluated numerically under each binding: the
/// same formulas as getRooflineSeconds, without walking the IR, building
/// multiplicities or evaluating exactly per op.
struct RooflineProgram {
  struct Entry {
    Operation *op;
    Multiplicity count;
    Phase phase;
    /// Per execution when `multiply` (no level sums over a step), else the
    /// total; the executions.
    sym::NumericExpr contraction, other, bytes, runs;
    /// A matrix product's grid per execution (MatmulGrid), if it is one.
    sym::NumericExpr rows, columns, batch;
    bool matmul = false;
    bool multiply = true;
    CollectiveOpInterface comm;
    /// A collective's group axes (slots), or its symbolic size when they
    /// are not all bound; its grid's axes, last first, and whether each is
    /// in the group.
    SmallVector<unsigned> groupAxes;
    sym::NumericExpr groupSize;
    SmallVector<std::pair<unsigned, bool>> gridAxes;
    bool hasGrid = false;
    /// A kernel or a collective (other ops take no time).
    bool timed = true;
    /// An op whose work routing decides (ExpertRouting.h): its rows per
    /// expert, and its bytes for every expert (per execution).
    bool routed = false;
    sym::NumericExpr rowsPerExpert, expertBytes;
  };
  std::vector<Entry> entries;
  /// The module's routing, and the slots of E, K and ep.
  std::shared_ptr<const RoutingModel> routing;
  unsigned E = 0, K = 0, ep = 0;

  RooflineProgram(Operation *root, sym::SymbolSlots &slots)
      : routing(std::make_shared<RoutingModel>(root)), E(slots.slot("E")),
        K(slots.slot("K")), ep(slots.slot("ep")) {
    walkWithCounts(root, [&](Operation *op, const Multiplicity &n) {
      Entry e{op, n, getPhase(op)};
      if (std::optional<RoutedOp> r = getRoutedOp(op)) {
        e.routed = true;
        e.rowsPerExpert = sym::NumericExpr(r->rowsPerExpert, slots);
        e.expertBytes = sym::NumericExpr(r->expertBytes, slots);
      }
      e.multiply = n.isProduct();
      e.runs = sym::NumericExpr(n.count(), slots);
      auto compile = [&](const sym::Expr &perRun) {
        return sym::NumericExpr(e.multiply ? perRun : n.of(perRun), slots);
      };
      // FLOPs as the phase costs count them (a collective's reduction
      // arithmetic too); time from the kernel or from the traffic.
      auto c = dyn_cast<CostOpInterface>(op);
      if (c) {
        Cost cost = getOpCost(c);
        e.contraction = compile(cost.contractionFlops);
        e.other = compile(cost.otherFlops);
        e.bytes = compile(cost.bytes);
        if (std::optional<MatmulGrid> g = getMatmulGrid(op)) {
          e.matmul = true;
          e.rows = sym::NumericExpr(g->rows, slots);
          e.columns = sym::NumericExpr(g->columns, slots);
          e.batch = sym::NumericExpr(g->batch, slots);
        }
      }
      if (auto comm = dyn_cast<CollectiveOpInterface>(op)) {
        e.comm = comm;
        e.bytes = compile(getSentBytes(comm));
        for (Attribute axis : comm.getAxesAttr())
          e.groupAxes.push_back(slots.slot(cast<StringAttr>(axis).getValue()));
        e.groupSize = sym::NumericExpr(comm.getGroupSize(), slots);
        if (auto grid = SymbolTable::lookupNearestSymbolFrom<GridOp>(
                op, comm.getGridAttr())) {
          e.hasGrid = true;
          for (Attribute a : llvm::reverse(grid.getAxes()))
            e.gridAxes.push_back({slots.slot(cast<StringAttr>(a).getValue()),
                                  llvm::is_contained(comm.getAxesAttr(), a)});
        }
      } else if (!c) {
        e.timed = false;
      }
      entries.push_back(std::move(e));
    });
  }

  /// The program of `root`, compiled once per cache.
  static std::shared_ptr<const RooflineProgram> of(Operation *root,
                                                   SymbolicCache &cache) {
    static const char tag = 0;
    return memoizeDerived<RooflineProgram>(
        &tag, root, [&] { return RooflineProgram(root, cache.slots); });
  }

  /// `x` over all of `e`'s executions under slot values `v`.
  static double total(const Entry &e, const sym::NumericExpr &x,
                      const std::vector<double> &v) {
    double one = x.evaluate(v);
    return e.multiply && one != 0 ? one * e.runs.evaluate(v) : one;
  }

  /// `e`'s work under routing (the busiest rank's, reading the experts it
  /// reaches), when routing decides it.
  void route(const Entry &e, const std::vector<double> &v, double &contraction,
             double &other, double &bytes) const {
    if (e.routed)
      routing->apply(v[E], v[K], v[ep], e.rowsPerExpert.evaluate(v),
                     total(e, e.expertBytes, v), contraction, other, bytes);
  }

  /// `e`'s seconds under slot values `v`; NaN when a value does not
  /// evaluate (the exact path then says why).
  double seconds(const Entry &e, const std::vector<double> &v,
                 const DeviceModel &d) const {
    if (!e.timed)
      return 0;
    double runs = e.runs.evaluate(v);
    if (!e.comm) {
      ::stage::MatmulShape shape;
      if (e.matmul)
        shape = {e.rows.evaluate(v), e.columns.evaluate(v),
                 e.batch.evaluate(v)};
      double contraction = total(e, e.contraction, v),
             other = total(e, e.other, v), bytes = total(e, e.bytes, v);
      route(e, v, contraction, other, bytes);
      return ::stage::kernelSeconds(contraction, other, bytes, runs, d, shape);
    }
    double bytes = total(e, e.bytes, v);
    if (bytes == 0)
      return 0;
    double none = 0;
    route(e, v, none, none, bytes);
    double size = 1;
    for (unsigned axis : e.groupAxes)
      size *= v[axis];
    if (std::isnan(size))
      size = e.groupSize.evaluate(v);
    ::stage::GroupSpan span{size, size};
    if (e.hasGrid) {
      SmallVector<std::pair<int64_t, bool>, 6> lastFirst;
      for (auto [axis, member] : e.gridAxes)
        lastFirst.push_back(
            {std::isnan(v[axis]) ? 1 : int64_t(v[axis]), member});
      span = groupSpan(lastFirst, size, d.gpusPerNode);
    }
    return ::stage::collectiveSeconds(collectiveKind(e.op), bytes, span, runs,
                                      d);
  }
};
} // namespace

LogicalResult
mlir::stage::walkRooflineSeconds(Operation *root, const sym::Bindings &b,
                                 const DeviceModel &d,
                                 function_ref<void(Operation *, double)> fn) {
  if (SymbolicCache *cache = SymbolicCache::active()) {
    std::shared_ptr<const RooflineProgram> program =
        RooflineProgram::of(root, *cache);
    std::vector<double> values;
    cache->slots.fill(b, values);
    for (const RooflineProgram::Entry &e : program->entries) {
      double sec = program->seconds(e, values, d);
      if (!std::isfinite(sec)) {
        FailureOr<double> exact = getRooflineSeconds(e.op, e.count, b, d);
        if (failed(exact))
          return failure();
        sec = *exact;
      }
      fn(e.op, sec);
    }
    return success();
  }
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

static FailureOr<double> computePhaseFlops(Operation *root, Phase phase,
                                           const sym::Bindings &b) {
  if (SymbolicCache *cache = SymbolicCache::active()) {
    std::shared_ptr<const RooflineProgram> program =
        RooflineProgram::of(root, *cache);
    std::vector<double> values;
    cache->slots.fill(b, values);
    double flops = 0;
    for (const RooflineProgram::Entry &e : program->entries)
      if (e.phase == phase)
        flops += RooflineProgram::total(e, e.contraction, values) +
                 RooflineProgram::total(e, e.other, values);
    if (std::isfinite(flops))
      return flops;
  }
  sym::Expr exact = getPhaseCosts(root).of(phase).flops();
  sym::Result<sym::Rational> v = exact.evaluateRational(b);
  if (!v)
    return root->emitError("FLOPs: ") << v.error();
  return v->toDouble();
}

FailureOr<double> mlir::stage::getPhaseFlops(Operation *root, Phase phase,
                                             const sym::Bindings &b) {
  static const char tag = 0;
  return memoizeEvaluated<double>(
      &tag, getTwinChunk(root), std::to_string(unsigned(phase)), b,
      [&] { return computePhaseFlops(root, phase, b); });
}

namespace {
/// The step of each op under a micro-batch loop, in the walk's order:
/// derived from the IR once per loop while a SymbolicCache lives.
struct LoopSteps {
  enum Step : uint8_t { Forward, InputGrad, WeightGrad };
  std::vector<Step> steps;

  explicit LoopSteps(MicrobatchesOp loop) {
    BackwardSplit split(loop);
    walkWithCounts(loop, [&](Operation *op, const Multiplicity &) {
      steps.push_back(getPhase(op) == Phase::Forward ? Forward
                      : split.isWeightGrad(op)       ? WeightGrad
                                                     : InputGrad);
    });
  }
};
} // namespace

/// One micro-batch's steps of `chunk`'s loop `loop`.
static FailureOr<StepWeights> chunkStepTimes(MicrobatchesOp loop,
                                             const sym::Bindings &b,
                                             const DeviceModel &d) {
  static const char tag = 0;
  std::shared_ptr<const LoopSteps> steps = memoizeDerived<LoopSteps>(
      &tag, loop.getOperation(), [&] { return LoopSteps(loop); });
  StepWeights t{0, 0, 0};
  size_t next = 0;
  // The loop's regions are one micro-batch's steps.
  if (failed(walkRooflineSeconds(loop, b, d, [&](Operation *, double sec) {
        switch (steps->steps[next++]) {
        case LoopSteps::Forward:
          t.forward += sec;
          break;
        case LoopSteps::InputGrad:
          t.inputGrad += sec;
          break;
        case LoopSteps::WeightGrad:
          t.weightGrad += sec;
          break;
        }
      })))
    return failure();
  return t;
}

FailureOr<std::vector<StepWeights>>
mlir::stage::getStepTimes(func::FuncOp fn, const StepStructure &s,
                          const sym::Bindings &b, const DeviceModel &d) {
  int64_t chunks = 0;
  for (const RankClass &c : s.classes)
    chunks += int64_t(c.chunks.size());
  std::vector<StepWeights> times(chunks, StepWeights{0, 0, 0});
  std::string key = d.timingKey();
  for (const RankClass &c : s.classes)
    for (auto [op, id] : llvm::zip(c.chunks, c.chunkIds)) {
      MicrobatchesOp loop = getMicrobatches(op);
      if (!loop)
        continue;
      static const char tag = 0;
      FailureOr<StepWeights> t =
          memoizeEvaluated<StepWeights>(&tag, getTwinChunk(op), key, b, [&] {
            return chunkStepTimes(loop, b, d);
          });
      if (failed(t))
        return failure();
      times[id] = *t;
    }
  return times;
}

static FailureOr<ScheduleShape> computeScheduleShape(func::FuncOp fn,
                                                     const StepStructure &s,
                                                     const sym::Bindings &b,
                                                     const DeviceModel &d) {
  ScheduleShape shape{s.kind, s.stages, s.virtualStages, 1};
  sym::Result<int64_t> M = s.microBatches.evaluate(b);
  if (!M)
    return fn.emitError("micro-batch count: ") << M.error();
  shape.microBatches = *M;
  if (s.kind == ScheduleKind::zb_v) {
    FailureOr<std::vector<StepWeights>> times = getStepTimes(fn, s, b, d);
    if (failed(times))
      return failure();
    shape.weights = std::move(*times);
  }
  return shape;
}

FailureOr<ScheduleShape> mlir::stage::getScheduleShape(func::FuncOp fn,
                                                       const StepStructure &s,
                                                       const sym::Bindings &b,
                                                       const DeviceModel &d) {
  // A plan's memory and its report both ask.
  static const char tag = 0;
  return memoizeEvaluated<ScheduleShape>(
      &tag, fn.getOperation(), d.timingKey(), b,
      [&] { return computeScheduleShape(fn, s, b, d); });
}

struct IterationTimes::Program {
  sym::SymbolSlots slots;
  std::optional<RooflineProgram> roofline;
  /// Per entry: whether its sizes depend on a chunk's place (`j`).
  std::vector<bool> perChunk;
  std::vector<double> base;
  unsigned B = 0, C = 0, T = 0, j = 0;
  DeviceModel device;

  /// Seconds of the entries (of one part) under `v`; an op left without
  /// work (no decodes, no chunk) takes none.
  double seconds(const std::vector<double> &v, bool chunkPart) const {
    double sum = 0;
    for (auto [e, chunk] : llvm::zip(roofline->entries, perChunk)) {
      if (chunk != chunkPart || !e.timed)
        continue;
      if (!e.comm && RooflineProgram::total(e, e.contraction, v) == 0 &&
          RooflineProgram::total(e, e.other, v) == 0 &&
          RooflineProgram::total(e, e.bytes, v) == 0)
        continue;
      sum += roofline->seconds(e, v, device);
    }
    return sum;
  }
};

/// Whether `op`'s operand or result sizes mention `symbol`.
static bool mentions(Operation *op, StringRef symbol) {
  auto in = [&](Type t) {
    auto st = dyn_cast<SymTensorType>(t);
    return st && llvm::any_of(st.getDims(), [&](const sym::Expr &d) {
             return d.symbols().count(symbol.str()) > 0;
           });
  };
  return llvm::any_of(op->getOperandTypes(), in) ||
         llvm::any_of(op->getResultTypes(), in);
}

FailureOr<IterationTimes>
IterationTimes::compile(func::FuncOp fn, const sym::Bindings &b,
                        const DeviceModel &d) {
  if (!fn.getBody().front().getOps<PipelineOp>().empty())
    return fn.emitError("a request stream runs on one pipeline stage "
                        "(pp=1): pipelined continuous batching is not "
                        "modelled yet");
  ServeOp serve;
  fn.walk([&](ServeOp s) { serve = s; });
  if (!serve || !serve.getChunk())
    return fn.emitError("a request stream needs a continuous-batching "
                        "program: stage-infer with chunked-prefill=C");
  RepeatOp loop;
  for (Operation &op : serve.getDecode().front())
    if (auto r = dyn_cast<RepeatOp>(op); r && r.getStep())
      loop = r;
  if (!loop)
    return serve.emitError("expected the mixed iterations' step loop");
  auto p = std::make_shared<Program>();
  p->roofline.emplace(loop, p->slots);
  for (const RooflineProgram::Entry &e : p->roofline->entries)
    p->perChunk.push_back(mentions(e.op, "j"));
  p->B = p->slots.slot("B");
  p->C = p->slots.slot("C");
  p->T = p->slots.slot("T");
  p->j = p->slots.slot("j");
  p->slots.fill(b, p->base);
  p->device = d;
  // Every size must evaluate at some mix: try one.
  std::vector<double> probe = p->base;
  probe[p->B] = probe[p->C] = probe[p->T] = 1;
  probe[p->j] = 0;
  for (const RooflineProgram::Entry &e : p->roofline->entries)
    if (!std::isfinite(p->roofline->seconds(e, probe, d)))
      return e.op->emitError("time estimate of an iteration: a size does not "
                             "evaluate under the module's bindings");
  IterationTimes t;
  t.program = std::move(p);
  return t;
}

double IterationTimes::seconds(const ::stage::IterationMix &mix) const {
  const Program &p = *program;
  std::vector<double> v = p.base;
  v[p.B] = double(mix.decodes);
  v[p.T] = mix.decodes ? mix.decodeContext / double(mix.decodes) - 1 : 0;
  double tokens = 0;
  for (const ::stage::IterationMix::Chunk &c : mix.chunks)
    tokens += double(c.size);
  v[p.C] = tokens;
  v[p.j] = 0;
  double sum = p.seconds(v, false);
  for (const ::stage::IterationMix::Chunk &c : mix.chunks) {
    v[p.C] = double(c.size);
    v[p.j] = double(c.prefix) / double(c.size);
    sum += p.seconds(v, true);
  }
  return sum;
}

