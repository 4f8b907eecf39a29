//===- Workload.cpp - Per-rank-class node lists of a training step --------===//
//
// Expansion of a partitioned program: repeats are unrolled layer by layer,
// the micro-batch loop step by step in the pipeline schedule's order. A
// node depends on the nodes that produced its operands (views produce no
// node and pass their producers on); the first nodes of a step also wait for
// the last node of the previous step, so the trace runs the schedule's
// order; communication ops form one chain per rank, so every member of a
// group issues its collectives in the same order.
//
//===----------------------------------------------------------------------===//

#include "Workload.h"

#include "Stage/Analysis/PipelineSchedule.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Transforms/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

#include <map>
#include <optional>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

namespace {

using Deps = SmallVector<uint32_t, 4>;

/// What a value's consumers wait for: its producers, or for a stack, the
/// producers of each slice.
struct Produced {
  Deps deps;
  std::vector<Deps> slices;
};

constexpr llvm::StringLiteral kRecomputeAttr("stage.recompute");

class ClassBuilder {
public:
  ClassBuilder(Workload &w, const sym::Bindings &b, const DeviceModel *device)
      : w(w), bindings(b), device(device) {}

  LogicalResult run(ArrayRef<Block *> chunks, ArrayRef<int64_t> chunkIds,
                    const ScheduleShape &shape, int64_t stage);
  ClassTrace take() { return std::move(trace); }

private:
  FailureOr<uint64_t> eval(Operation *at, const sym::Expr &e, StringRef what);
  Deps depsOf(ValueRange values);
  uint32_t addNode(TraceNode node, Operation *at);
  LogicalResult emitBlock(Block &block);
  LogicalResult emitOp(Operation *op);
  LogicalResult emitRepeat(RepeatOp op);
  LogicalResult emitCompute(Operation *op, Cost cost);
  LogicalResult emitComm(Operation *op);
  int groupOf(ArrayAttr axes);

  Workload &w;
  const sym::Bindings &bindings;
  const DeviceModel *device;
  ClassTrace trace;
  DenseMap<Value, Produced> env;
  int64_t lastComm = -1;
  int64_t barrier = -1;
  uint32_t stepStart = 0;
  int64_t microbatch = 0, microbatches = 1;
  const char *phase = "fwd";
};

} // namespace

FailureOr<uint64_t> ClassBuilder::eval(Operation *at, const sym::Expr &e,
                                       StringRef what) {
  sym::Result<sym::Rational> v = e.evaluateRational(bindings);
  if (!v)
    return at->emitError(what) << ": " << v.error();
  std::optional<int64_t> c = v->ceilToInt64();
  if (!c || *c < 0)
    return at->emitError(what) << ": " << e.str() << " = " << v->str()
                               << " is not a non-negative 64-bit value";
  return uint64_t(*c);
}

Deps ClassBuilder::depsOf(ValueRange values) {
  llvm::SmallSetVector<uint32_t, 8> set;
  for (Value v : values) {
    auto it = env.find(v);
    if (it == env.end())
      continue;
    set.insert(it->second.deps.begin(), it->second.deps.end());
    // A consumer of a whole stack waits for every slice of it.
    for (const Deps &slice : it->second.slices)
      set.insert(slice.begin(), slice.end());
  }
  return Deps(set.begin(), set.end());
}

uint32_t ClassBuilder::addNode(TraceNode node, Operation *at) {
  // A node waiting on nothing of its own step waits for the previous step.
  bool inStep = llvm::any_of(node.deps, [&](uint32_t d) { return d >= stepStart; });
  if (!inStep && barrier >= 0 && !llvm::is_contained(node.deps, uint32_t(barrier)))
    node.deps.push_back(uint32_t(barrier));
  trace.nodes.push_back(std::move(node));
  return trace.nodes.size() - 1;
}

int ClassBuilder::groupOf(ArrayAttr axes) {
  SmallVector<int> key;
  for (Attribute a : axes) {
    StringRef name = cast<StringAttr>(a).getValue();
    for (auto [i, axis] : llvm::enumerate(w.axes))
      if (axis == name)
        key.push_back(int(i));
  }
  llvm::sort(key);
  for (auto [i, k] : llvm::enumerate(w.groupAxes))
    if (k == key)
      return int(i);
  w.groupAxes.push_back(key);
  return int(w.groupAxes.size() - 1);
}

LogicalResult ClassBuilder::emitCompute(Operation *op, Cost cost) {
  FailureOr<uint64_t> c = eval(op, cost.contractionFlops, "FLOPs");
  FailureOr<uint64_t> o = eval(op, cost.otherFlops, "FLOPs");
  FailureOr<uint64_t> b = eval(op, cost.bytes, "bytes");
  if (failed(c) || failed(o) || failed(b))
    return failure();
  Deps deps = depsOf(op->getOperands());
  if (*c + *o == 0 && *b == 0) {
    // A view: no kernel, consumers wait for the operands' producers.
    for (Value r : op->getResults())
      env[r] = Produced{deps, {}};
    return success();
  }
  TraceNode n;
  n.kind = NodeKind::Compute;
  const char *p = op->hasAttr(kRecomputeAttr) ? "rc" : phase;
  n.name = (Twine(p) + ":" + op->getName().stripDialect()).str();
  // Consumers divide by these: never 0 (a 0 tensor_size stalls ASTRA-sim).
  n.flops = std::max<uint64_t>(*c + *o, 1);
  n.bytes = std::max<uint64_t>(*b, 1);
  if (device)
    n.micros = std::max<uint64_t>(
        1, uint64_t(std::ceil(device->seconds(double(*c), double(*o),
                                              double(*b)) * 1e6)));
  n.deps = deps;
  uint32_t id = addNode(std::move(n), op);
  for (Value r : op->getResults())
    env[r] = Produced{{id}, {}};
  return success();
}

LogicalResult ClassBuilder::emitComm(Operation *op) {
  auto comm = cast<CollectiveOpInterface>(op);
  FailureOr<uint64_t> bytes = eval(op, comm.getCommBytes(), "message size");
  if (failed(bytes))
    return failure();
  if (isa<LocalSplitOp>(op)) {
    env[op->getResult(0)] = Produced{depsOf(op->getOperands()), {}};
    return success();
  }
  TraceNode n;
  n.name = (Twine(phase) + ":" + op->getName().stripDialect()).str();
  n.bytes = *bytes;
  if (*bytes == 0)
    return op->emitError("communicates 0 bytes");
  n.deps = depsOf(op->getOperands());
  bool slot = !isa<RecvOp>(op);
  if (slot && lastComm >= 0 && !llvm::is_contained(n.deps, uint32_t(lastComm)))
    n.deps.push_back(uint32_t(lastComm));
  if (auto send = dyn_cast<SendOp>(op)) {
    n.kind = NodeKind::Send;
    n.shift = send.getShift();
    n.tag = int64_t(send.getChannel()) * microbatches + microbatch;
  } else if (auto recv = dyn_cast<RecvOp>(op)) {
    n.kind = NodeKind::Recv;
    n.shift = recv.getShift();
    n.tag = int64_t(recv.getChannel()) * microbatches + microbatch;
  } else {
    n.kind = NodeKind::Collective;
    n.group = groupOf(comm.getAxesAttr());
    n.commType = isa<AllReduceOp>(op)       ? AllReduce
                 : isa<AllGatherOp>(op)     ? AllGather
                 : isa<ReduceScatterOp>(op) ? ReduceScatter
                                            : AllToAll;
  }
  if ((n.kind == NodeKind::Send || n.kind == NodeKind::Recv) &&
      n.tag >= (int64_t(1) << 31))
    return op->emitError("send/recv tag ") << n.tag << " does not fit in 31 bits";
  uint32_t id = addNode(std::move(n), op);
  if (slot)
    lastComm = id;
  for (Value r : op->getResults())
    env[r] = Produced{{id}, {}};
  return success();
}

LogicalResult ClassBuilder::emitRepeat(RepeatOp op) {
  FailureOr<uint64_t> count = eval(op, op.getCount().getValue(), "repeat count");
  if (failed(count))
    return failure();
  unsigned nCarry = op.getNumCarried();
  SmallVector<Deps> carried;
  for (Value init : op.getInits())
    carried.push_back(depsOf(init));
  // Copies: the body's nodes grow `env`, which moves its entries.
  std::vector<std::optional<Produced>> stacks;
  for (Value s : op.getSlices()) {
    auto it = env.find(s);
    stacks.push_back(it == env.end() ? std::nullopt
                                     : std::optional<Produced>(it->second));
  }
  Block &body = op.getBodyBlock();
  auto yield = cast<YieldOp>(body.getTerminator());
  unsigned nStacked = yield.getValues().size() - nCarry;
  std::vector<std::vector<Deps>> stacked(nStacked, std::vector<Deps>(*count));
  for (uint64_t k = 0; k < *count; ++k) {
    uint64_t i = op.getReverse() ? *count - 1 - k : k;
    for (unsigned c = 0; c < nCarry; ++c)
      env[body.getArgument(c)] = Produced{carried[c], {}};
    for (auto [j, arg] : llvm::enumerate(op.getSliceArgs())) {
      const std::optional<Produced> &p = stacks[j];
      Deps d;
      if (p && !p->slices.empty())
        d = p->slices[i];
      else if (p)
        d = p->deps;
      env[arg] = Produced{d, {}};
    }
    if (failed(emitBlock(body)))
      return failure();
    for (unsigned c = 0; c < nCarry; ++c)
      carried[c] = depsOf(yield.getValues()[c]);
    for (unsigned s = 0; s < nStacked; ++s)
      stacked[s][i] = depsOf(yield.getValues()[nCarry + s]);
  }
  for (unsigned c = 0; c < nCarry; ++c)
    env[op.getResult(c)] = Produced{carried[c], {}};
  for (unsigned s = 0; s < nStacked; ++s) {
    Produced p;
    p.slices = std::move(stacked[s]);
    env[op.getResult(nCarry + s)] = std::move(p);
  }
  return success();
}

LogicalResult ClassBuilder::emitOp(Operation *op) {
  if (isa<ParamOp, InputOp, LossOp, YieldOp, func::ReturnOp>(op))
    return success();
  if (auto rep = dyn_cast<RepeatOp>(op))
    return emitRepeat(rep);
  if (isa<CollectiveOpInterface>(op))
    return emitComm(op);
  if (isa<MicrobatchesOp>(op))
    return op->emitError("nested micro-batch loops cannot be emitted");
  if (auto c = dyn_cast<CostOpInterface>(op))
    return emitCompute(op, c.getCost());
  return op->emitError("cannot be written to a trace");
}

LogicalResult ClassBuilder::emitBlock(Block &block) {
  for (Operation &op : block)
    if (failed(emitOp(&op)))
      return failure();
  return success();
}

LogicalResult ClassBuilder::run(ArrayRef<Block *> chunks,
                                ArrayRef<int64_t> chunkIds,
                                const ScheduleShape &shape, int64_t stage) {
  microbatches = shape.microBatches;
  // Each chunk: its weights, one micro-batch loop, then the iteration's
  // gradient reductions and optimizer steps.
  SmallVector<MicrobatchesOp> loops;
  for (Block *chunk : chunks) {
    MicrobatchesOp mb;
    for (Operation &op : *chunk)
      if (auto m = dyn_cast<MicrobatchesOp>(op))
        mb = m;
    loops.push_back(mb);
    for (Operation &op : *chunk) {
      if (&op == mb.getOperation())
        break;
      if (!mb && !isa<ParamOp, InputOp>(op))
        continue;
      if (failed(emitOp(&op)))
        return failure();
    }
  }
  auto chunkIndex = [&](int64_t id) {
    for (auto [i, c] : llvm::enumerate(chunkIds))
      if (c == id)
        return int64_t(i);
    return int64_t(-1);
  };

  std::map<std::pair<int64_t, int64_t>, std::vector<Deps>> kept;
  std::vector<int64_t> accumulated(chunks.size(), -1);
  std::vector<std::vector<Deps>> lastGrads(chunks.size());
  for (const PipelineStep &step : getStageSchedule(shape, stage)) {
    int64_t ci = chunkIndex(step.chunk);
    MicrobatchesOp mb = loops[ci];
    if (!mb)
      continue;
    stepStart = trace.nodes.size();
    microbatch = step.microbatch;
    phase = step.forward ? "fwd" : "bwd";
    Block &region = step.forward ? mb.getForwardBlock() : mb.getBackwardBlock();
    if (!step.forward)
      for (auto [arg, d] :
           llvm::zip(region.getArguments(), kept[{step.chunk, step.microbatch}]))
        env[arg] = Produced{d, {}};
    if (failed(emitBlock(region)))
      return failure();
    Operation *yield = region.getTerminator();
    std::vector<Deps> out;
    for (Value v : yield->getOperands())
      out.push_back(depsOf(v));
    if (step.forward) {
      kept[{step.chunk, step.microbatch}] = std::move(out);
    } else {
      kept.erase({step.chunk, step.microbatch});
      // Gradients of every micro-batch after the first add into the sums.
      if (microbatches > 1 && step.microbatch > 0 && mb.getNumResults()) {
        uint64_t elements = 0, bytes = 0;
        for (Value g : yield->getOperands()) {
          auto t = cast<SymTensorType>(g.getType());
          FailureOr<uint64_t> n = eval(mb, t.getNumElements(), "gradient size");
          if (failed(n))
            return failure();
          elements += *n;
          bytes += 3 * *n * uint64_t(t.getElementBytes());
        }
        TraceNode acc;
        acc.name = "acc:grad_accumulate";
        acc.flops = std::max<uint64_t>(elements, 1);
        acc.bytes = std::max<uint64_t>(bytes, 1);
        if (device)
          acc.micros = std::max<uint64_t>(
              1, uint64_t(std::ceil(device->seconds(0, double(elements),
                                                    double(bytes)) * 1e6)));
        llvm::SmallSetVector<uint32_t, 8> d;
        for (const Deps &g : out)
          d.insert(g.begin(), g.end());
        if (accumulated[ci] >= 0)
          d.insert(uint32_t(accumulated[ci]));
        acc.deps.assign(d.begin(), d.end());
        accumulated[ci] = addNode(std::move(acc), mb);
      }
      lastGrads[ci] = std::move(out);
    }
    barrier = int64_t(trace.nodes.size()) - 1;
  }

  // The iteration's reductions and updates, chunk by chunk.
  stepStart = trace.nodes.size();
  barrier = -1;
  phase = "opt";
  for (auto [ci, chunk] : llvm::enumerate(chunks)) {
    MicrobatchesOp mb = loops[ci];
    if (!mb) {
      // A forward-only program (inference) runs once.
      phase = "fwd";
      if (failed(emitBlock(*chunk)))
        return failure();
      phase = "opt";
      continue;
    }
    for (unsigned i = 0; i < mb.getNumResults(); ++i) {
      Deps d = i < lastGrads[ci].size() ? lastGrads[ci][i] : Deps();
      if (accumulated[ci] >= 0)
        d.push_back(uint32_t(accumulated[ci]));
      env[mb.getResult(i)] = Produced{d, {}};
    }
    bool after = false;
    for (Operation &op : *chunk) {
      if (&op == mb.getOperation()) {
        after = true;
        continue;
      }
      if (after && failed(emitOp(&op)))
        return failure();
    }
  }
  return success();
}

FailureOr<Workload> mlir::stage::chakra::buildWorkload(ModuleOp module,
                                                       const sym::Bindings &b,
                                                       const DeviceModel *device) {
  Workload w;
  GridOp grid = getGrid(module);
  if (grid) {
    for (const std::string &axis : grid.getAxisNames()) {
      auto it = b.find(axis);
      int64_t d = it == b.end() ? 1 : it->second;
      if (d < 1)
        return module.emitError("axis '") << axis << "' has degree " << d;
      w.axes.push_back(axis);
      w.degrees.push_back(d);
      if (axis == "pp")
        w.ppAxis = int(w.axes.size() - 1);
    }
  }
  func::FuncOp fn;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal()) {
      if (fn)
        return module.emitError("the module has several functions; trace "
                                "emission takes one training step");
      fn = f;
    }
  if (!fn)
    return module.emitError("the module has no function to emit");
  if (WalkResult r = fn.walk([](Operation *op) {
        if (op->hasAttr(kShardingAttrName) || op->hasAttr(kOperandShardingAttrName))
          return WalkResult::interrupt();
        return WalkResult::advance();
      });
      r.wasInterrupted())
    return fn.emitError("still carries sharding annotations: run "
                        "stage-partition before emitting traces");

  // Every shape a rank holds is whole under these bindings (`--bind` may
  // rebind a degree the program was partitioned for).
  WalkResult whole = fn.walk([&](Operation *op) {
    for (Value v : op->getResults()) {
      auto t = dyn_cast<SymTensorType>(v.getType());
      if (!t)
        continue;
      for (unsigned d = 0; d < t.getRank(); ++d)
        if (sym::Result<int64_t> n = t.getDim(d).evaluate(b); !n) {
          op->emitError("dimension ") << d << " of the result: " << n.error();
          return WalkResult::interrupt();
        }
    }
    return WalkResult::advance();
  });
  if (whole.wasInterrupted())
    return failure();

  int64_t pp = w.ppAxis >= 0 ? w.degrees[w.ppAxis] : 1;
  auto pipes = fn.getBody().front().getOps<PipelineOp>();
  SmallVector<Block *> blocks;
  // Without a pipeline, each micro-batch's forward is followed by its
  // backward: 1F1B on one stage.
  ScheduleShape shape{ScheduleKind::one_f_one_b, 1, 1, 1};
  if (!pipes.empty()) {
    PipelineOp pipe = *pipes.begin();
    if (pipe.getNumPhysicalStages() != pp)
      return pipe.emitOpError("has ")
             << pipe.getNumPhysicalStages() << " stages per rank group but pp = "
             << pp;
    shape.kind = pipe.getSchedule();
    shape.stages = pp;
    shape.virtualStages = pipe.getVirtualStages();
    for (PipelineStageOp s : getPipelineStages(pipe))
      blocks.push_back(&s.getBody().front());
  } else {
    if (pp != 1)
      return fn.emitError("pp = ") << pp << " but the program has no stage.pipeline";
    blocks.push_back(&fn.getBody().front());
  }
  // The micro-batch count, the same for every stage.
  int64_t M = 1;
  for (Block *blk : blocks)
    for (auto mb : blk->getOps<MicrobatchesOp>()) {
      sym::Result<int64_t> m = mb.getCount().getValue().evaluate(b);
      if (!m)
        return mb.emitError("micro-batch count: ") << m.error();
      M = *m;
    }
  shape.microBatches = M;
  if (std::string why = checkSchedule(shape); !why.empty())
    return fn.emitError(why);

  for (int64_t p = 0; p < pp; ++p) {
    SmallVector<Block *> chunks;
    SmallVector<int64_t> ids;
    for (auto [j, blk] : llvm::enumerate(blocks))
      if (int64_t(j) % pp == p) {
        chunks.push_back(blk);
        ids.push_back(int64_t(j));
      }
    ClassBuilder cb(w, b, device);
    if (failed(cb.run(chunks, ids, shape, p)))
      return failure();
    w.classes.push_back(cb.take());
  }
  return w;
}
