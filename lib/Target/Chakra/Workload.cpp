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
// Gradients are followed while the backward steps run: each layer's
// gradient is added into its running sum as soon as it exists, and in the
// last micro-batch the collectives that reduce it (data-parallel
// all-reduce or reduce-scatter, per layer of a layer stack) join the chain
// right there, so they overlap the rest of the backward pass as in
// PyTorch DDP or Megatron-LM's overlapped gradient reduction. As there,
// gradients are reduced in buckets: the pieces that become ready are
// collected per kind of collective until they reach the bucket size, then
// reduced by one collective of their summed size.
//
//===----------------------------------------------------------------------===//

#include "Workload.h"

#include "Stage/Analysis/CommAnalysis.h"
#include "Stage/Analysis/PipelineSchedule.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"

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

  /// What layer `slice` of `slices` waits for (-1: the whole value).
  Deps &part(int64_t slice, int64_t slices) {
    if (slice < 0)
      return deps;
    this->slices.resize(slices);
    return this->slices[slice];
  }
};

/// One chunk's micro-batch loop and the collectives after it that reduce
/// its gradients. The running sum of gradient g is what
/// `env[loop.getResult(g)]` holds: its producers, per layer for a stack.
struct ChunkGradients {
  MicrobatchesOp loop;
  SmallVector<SymTensorType> types; // per gradient
  /// Per gradient, the collectives that reduce it, in program order (each
  /// takes the previous one's result).
  std::vector<SmallVector<Operation *, 2>> reductions;
};

/// A gradient's reduction that waits for its bucket: collective `step` of
/// gradient `grad`'s chain, on layer `slice` of `slices` (-1: all of it).
struct Piece {
  unsigned grad, step;
  int64_t slice, slices;
};

/// Pieces of one kind of collective (operation and axes) reduced together.
struct Bucket {
  Operation *kind;
  llvm::SmallSetVector<uint32_t, 8> deps;
  uint64_t bytes = 0;
  SmallVector<Piece> pieces;
};

/// What a backward step of a chunk reports as its gradients appear.
struct BackwardWatch {
  ChunkGradients *chunk = nullptr;
  bool last = false; // the loop's last micro-batch: the gradients are reduced
  DenseMap<Value, SmallVector<unsigned, 1>> grads; // yielded value -> indices
  DenseSet<Value> delivered;
};

class ClassBuilder {
public:
  ClassBuilder(Workload &w, const sym::Bindings &b, const DeviceModel *device,
               uint64_t bucketBytes)
      : w(w), bindings(b), device(device), bucketBytes(bucketBytes) {}

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
  FailureOr<uint32_t> addComm(Operation *op, Deps deps, uint64_t bytes,
                              StringRef phaseName);
  uint32_t addCollective(std::string name, int commType, ArrayAttr axes,
                         Deps deps, uint64_t bytes);
  int groupOf(ArrayAttr axes);
  ChunkGradients planGradients(Block *chunk, MicrobatchesOp loop);
  LogicalResult gradientsReady(ArrayRef<unsigned> grads, ArrayRef<Deps> deps,
                               int64_t slice, int64_t slices);
  LogicalResult deliverWhole(Value v);
  LogicalResult addPiece(const Piece &p);
  LogicalResult flush(size_t bucket);

  Workload &w;
  const sym::Bindings &bindings;
  const DeviceModel *device;
  uint64_t bucketBytes;
  std::vector<Bucket> buckets; // the open ones, oldest first
  ClassTrace trace;
  DenseMap<Value, Produced> env;
  int64_t lastComm = -1;
  int64_t barrier = -1;
  /// The last node of the schedule's step (gradient reductions excluded:
  /// the next step's compute does not wait for them).
  int64_t lastStepNode = -1;
  bool addingReduction = false;
  BackwardWatch *watch = nullptr;
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
  if (!addingReduction)
    lastStepNode = int64_t(trace.nodes.size()) - 1;
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
  const char *p = isRecomputation(op) ? "rc" : phase;
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
  // Collectives within the op (a vocabulary-parallel cross-entropy's),
  // after its kernel; its result waits for them.
  for (const ImplicitCollective &c : getImplicitCollectives(op)) {
    for (Attribute a : c.axes)
      if (!llvm::is_contained(w.axes, cast<StringAttr>(a).getValue()))
        return op->emitError("'")
               << StageDialect::VocabParallelAttrHelper::getNameStr()
               << "' names axis " << a << ", which the grid does not have";
    FailureOr<uint64_t> bytes = eval(op, c.bytes, "message size");
    if (failed(bytes))
      return failure();
    id = addCollective((Twine(phase) + ":all_reduce").str(), AllReduce,
                       c.axes, {id}, *bytes);
  }
  for (Value r : op->getResults())
    env[r] = Produced{{id}, {}};
  return success();
}

uint32_t ClassBuilder::addCollective(std::string name, int commType,
                                     ArrayAttr axes, Deps deps,
                                     uint64_t bytes) {
  TraceNode n;
  n.kind = NodeKind::Collective;
  n.name = std::move(name);
  n.commType = commType;
  n.group = groupOf(axes);
  n.bytes = bytes;
  n.deps = std::move(deps);
  if (lastComm >= 0 && !llvm::is_contained(n.deps, uint32_t(lastComm)))
    n.deps.push_back(uint32_t(lastComm));
  uint32_t id = addNode(std::move(n), nullptr);
  lastComm = id;
  return id;
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
  FailureOr<uint32_t> id =
      addComm(op, depsOf(op->getOperands()), *bytes, phase);
  if (failed(id))
    return failure();
  for (Value r : op->getResults())
    env[r] = Produced{{*id}, {}};
  return success();
}

FailureOr<uint32_t> ClassBuilder::addComm(Operation *op, Deps deps,
                                          uint64_t bytes, StringRef phaseName) {
  std::string name = (phaseName + ":" + op->getName().stripDialect()).str();
  if (bytes == 0)
    return op->emitError("communicates 0 bytes");
  if (!isa<SendOp, RecvOp>(op))
    return addCollective(std::move(name),
                         isa<AllReduceOp>(op)       ? AllReduce
                         : isa<AllGatherOp>(op)     ? AllGather
                         : isa<ReduceScatterOp>(op) ? ReduceScatter
                                                    : AllToAll,
                         cast<CollectiveOpInterface>(op).getAxesAttr(),
                         std::move(deps), bytes);
  TraceNode n;
  n.name = std::move(name);
  n.bytes = bytes;
  n.deps = std::move(deps);
  bool slot = !isa<RecvOp>(op);
  if (slot && lastComm >= 0 && !llvm::is_contained(n.deps, uint32_t(lastComm)))
    n.deps.push_back(uint32_t(lastComm));
  if (auto send = dyn_cast<SendOp>(op)) {
    n.kind = NodeKind::Send;
    n.shift = send.getShift();
    n.tag = int64_t(send.getChannel()) * microbatches + microbatch;
  } else {
    auto recv = cast<RecvOp>(op);
    n.kind = NodeKind::Recv;
    n.shift = recv.getShift();
    n.tag = int64_t(recv.getChannel()) * microbatches + microbatch;
  }
  if (n.tag >= (int64_t(1) << 31))
    return op->emitError("send/recv tag ") << n.tag << " does not fit in 31 bits";
  uint32_t id = addNode(std::move(n), op);
  if (slot)
    lastComm = id;
  return id;
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
    // This layer's slices of watched gradients are complete.
    if (watch) {
      SmallVector<unsigned> grads;
      SmallVector<Deps> deps;
      for (unsigned s = 0; s < nStacked; ++s) {
        auto it = watch->grads.find(op.getResult(nCarry + s));
        if (it == watch->grads.end())
          continue;
        for (unsigned g : it->second) {
          grads.push_back(g);
          deps.push_back(stacked[s][i]);
        }
      }
      if (!grads.empty() &&
          failed(gradientsReady(grads, deps, int64_t(i), int64_t(*count))))
        return failure();
    }
  }
  if (watch)
    for (unsigned s = 0; s < nStacked; ++s)
      if (watch->grads.count(op.getResult(nCarry + s)))
        watch->delivered.insert(op.getResult(nCarry + s));
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
  for (Operation &op : block) {
    if (failed(emitOp(&op)))
      return failure();
    if (watch)
      for (Value r : op.getResults())
        if (failed(deliverWhole(r)))
          return failure();
  }
  return success();
}

LogicalResult ClassBuilder::deliverWhole(Value v) {
  auto it = watch->grads.find(v);
  if (it == watch->grads.end() || !watch->delivered.insert(v).second)
    return success();
  SmallVector<Deps> deps(it->second.size(), depsOf(v));
  return gradientsReady(it->second, deps, -1, 0);
}

LogicalResult ClassBuilder::addPiece(const Piece &p) {
  Operation *op = watch->chunk->reductions[p.grad][p.step];
  Value input = op->getOperand(0);
  auto it = env.find(input);
  Deps d = it != env.end() && p.slice >= 0 &&
                   int64_t(it->second.slices.size()) == p.slices
               ? it->second.slices[p.slice]
               : depsOf(input);
  auto comm = cast<CollectiveOpInterface>(op);
  FailureOr<uint64_t> bytes = eval(op, comm.getCommBytes(), "message size");
  if (failed(bytes))
    return failure();
  auto sameKind = [&](const Bucket &b) {
    return b.kind->getName() == op->getName() &&
           cast<CollectiveOpInterface>(b.kind).getAxesAttr() ==
               comm.getAxesAttr();
  };
  size_t i = llvm::find_if(buckets, sameKind) - buckets.begin();
  if (i == buckets.size())
    buckets.push_back(Bucket{op, {}, 0, {}});
  Bucket &b = buckets[i];
  b.deps.insert(d.begin(), d.end());
  b.bytes += p.slice < 0 ? *bytes : llvm::divideCeil(*bytes, p.slices);
  b.pieces.push_back(p);
  if (b.bytes >= bucketBytes)
    return flush(i);
  return success();
}

LogicalResult ClassBuilder::flush(size_t index) {
  Bucket b = std::move(buckets[index]);
  buckets.erase(buckets.begin() + index);
  addingReduction = true;
  FailureOr<uint32_t> id =
      addComm(b.kind, Deps(b.deps.begin(), b.deps.end()), b.bytes, "grad");
  addingReduction = false;
  if (failed(id))
    return failure();
  ChunkGradients &c = *watch->chunk;
  for (const Piece &p : b.pieces)
    env[c.reductions[p.grad][p.step]->getResult(0)].part(p.slice, p.slices) =
        {*id};
  // The next collective of each piece's chain takes this one's result.
  for (const Piece &p : b.pieces)
    if (p.step + 1 < c.reductions[p.grad].size() &&
        failed(addPiece(Piece{p.grad, p.step + 1, p.slice, p.slices})))
      return failure();
  return success();
}

/// A collective that acts on each layer of a stack alone (not along the
/// stack's dimension 0) can be issued layer by layer.
static bool actsPerLayer(Operation *op) {
  if (isa<AllReduceOp>(op))
    return true;
  if (auto g = dyn_cast<AllGatherOp>(op))
    return g.getDim() != 0;
  if (auto rs = dyn_cast<ReduceScatterOp>(op))
    return rs.getDim() != 0;
  if (auto a = dyn_cast<AllToAllOp>(op))
    return a.getSplitDim() != 0 && a.getConcatDim() != 0;
  return false;
}

ChunkGradients ClassBuilder::planGradients(Block *chunk, MicrobatchesOp loop) {
  ChunkGradients c;
  c.loop = loop;
  Operation *yield = loop.getBackwardBlock().getTerminator();
  DenseMap<Value, unsigned> reduces; // value -> the gradient it reduces
  SmallVector<bool> stacked;         // per gradient: a layer stack
  for (auto [g, v] : llvm::enumerate(yield->getOperands())) {
    c.types.push_back(cast<SymTensorType>(v.getType()));
    auto rep = v.getDefiningOp<RepeatOp>();
    stacked.push_back(rep && cast<OpResult>(v).getResultNumber() >=
                                 rep.getNumCarried());
    reduces[loop.getResult(g)] = g;
  }
  c.reductions.resize(c.types.size());
  bool after = false;
  for (Operation &op : *chunk) {
    after |= &op == loop.getOperation();
    if (!after || !isa<CollectiveOpInterface>(op) ||
        isa<LocalSplitOp, SendOp, RecvOp>(op) || op.getNumOperands() != 1)
      continue;
    auto it = reduces.find(op.getOperand(0));
    if (it == reduces.end())
      continue;
    unsigned g = it->second;
    if (stacked[g] && !actsPerLayer(&op))
      continue;
    c.reductions[g].push_back(&op);
    reduces[op.getResult(0)] = g;
  }
  return c;
}

LogicalResult ClassBuilder::gradientsReady(ArrayRef<unsigned> grads,
                                           ArrayRef<Deps> deps, int64_t slice,
                                           int64_t slices) {
  ChunkGradients &c = *watch->chunk;
  // What gradient g's running sum (its layer `slice`) waits for.
  auto sum = [&](unsigned g) -> Deps & {
    return env[c.loop.getResult(g)].part(slice, slices);
  };
  if (microbatch == 0) {
    for (auto [g, d] : llvm::zip(grads, deps))
      sum(g) = d;
  } else {
    // Every later micro-batch adds its gradients into the sums: one kernel
    // for what became ready together (a layer's gradients).
    uint64_t elements = 0, bytes = 0;
    llvm::SmallSetVector<uint32_t, 8> d;
    for (auto [g, gd] : llvm::zip(grads, deps)) {
      FailureOr<uint64_t> n =
          eval(c.loop, c.types[g].getNumElements(), "gradient size");
      if (failed(n))
        return failure();
      uint64_t part = slice < 0 ? *n : *n / uint64_t(slices);
      elements += part;
      bytes += 3 * part * uint64_t(c.types[g].getElementBytes());
      d.insert(gd.begin(), gd.end());
      Deps &before = sum(g);
      d.insert(before.begin(), before.end());
    }
    TraceNode acc;
    acc.name = "acc:grad_accumulate";
    acc.flops = std::max<uint64_t>(elements, 1);
    acc.bytes = std::max<uint64_t>(bytes, 1);
    if (device)
      acc.micros = std::max<uint64_t>(
          1, uint64_t(std::ceil(
                 device->seconds(0, double(elements), double(bytes)) * 1e6)));
    acc.deps.assign(d.begin(), d.end());
    uint32_t id = addNode(std::move(acc), c.loop);
    for (unsigned g : grads)
      sum(g) = {id};
  }
  if (!watch->last)
    return success();
  // The last micro-batch: reduce these sums now, layer by layer.
  for (unsigned g : grads)
    if (!c.reductions[g].empty() &&
        failed(addPiece(Piece{g, 0, slice, slices})))
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

  std::vector<ChunkGradients> gradients;
  for (auto [chunk, mb] : llvm::zip(chunks, loops))
    gradients.push_back(mb ? planGradients(chunk, mb) : ChunkGradients());
  DenseSet<Operation *> reducedEarly;
  for (const ChunkGradients &c : gradients)
    for (const auto &ops : c.reductions)
      reducedEarly.insert(ops.begin(), ops.end());

  // What each micro-batch's forward keeps for its backward (per layer for
  // stacked activations, so a layer's backward waits for its own).
  std::map<std::pair<int64_t, int64_t>, std::vector<Produced>> kept;
  for (const PipelineStep &step : getStageSchedule(shape, stage)) {
    int64_t ci = chunkIndex(step.chunk);
    MicrobatchesOp mb = loops[ci];
    if (!mb)
      continue;
    stepStart = trace.nodes.size();
    microbatch = step.microbatch;
    phase = step.forward ? "fwd" : "bwd";
    Block &region = step.forward ? mb.getForwardBlock() : mb.getBackwardBlock();
    Operation *yield = region.getTerminator();
    BackwardWatch bw;
    bw.chunk = &gradients[ci];
    bw.last = step.microbatch == microbatches - 1;
    if (!step.forward) {
      for (auto [arg, d] : llvm::zip(region.getArguments(),
                                     kept[{step.chunk, step.microbatch}]))
        env[arg] = d;
      for (auto [g, v] : llvm::enumerate(yield->getOperands()))
        bw.grads[v].push_back(unsigned(g));
      watch = &bw;
    }
    if (failed(emitBlock(region)))
      return failure();
    if (!step.forward) {
      // Gradients no op of the step produced (an argument passed through).
      for (Value v : yield->getOperands())
        if (failed(deliverWhole(v)))
          return failure();
      // The backward pass is over: the last buckets are reduced now.
      while (!buckets.empty())
        if (failed(flush(0)))
          return failure();
      watch = nullptr;
      kept.erase({step.chunk, step.microbatch});
    } else {
      std::vector<Produced> out;
      for (Value v : yield->getOperands()) {
        auto it = env.find(v);
        out.push_back(it == env.end() ? Produced() : it->second);
      }
      kept[{step.chunk, step.microbatch}] = std::move(out);
    }
    barrier = lastStepNode;
  }

  // The iteration's remaining reductions and updates, chunk by chunk.
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
    bool after = false;
    for (Operation &op : *chunk) {
      if (&op == mb.getOperation()) {
        after = true;
        continue;
      }
      if (after && !reducedEarly.contains(&op) && failed(emitOp(&op)))
        return failure();
    }
  }
  return success();
}

FailureOr<Workload>
mlir::stage::chakra::buildWorkload(ModuleOp module, const sym::Bindings &b,
                                   const DeviceModel *device,
                                   uint64_t gradientBucketBytes) {
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
        if (hasShardingAnnotations(op))
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
             << pipe.getNumPhysicalStages()
             << " stages per rank group but pp = " << pp;
    shape.kind = pipe.getSchedule();
    shape.stages = pp;
    shape.virtualStages = pipe.getVirtualStages();
    for (PipelineStageOp s : getPipelineStages(pipe))
      blocks.push_back(&s.getBody().front());
  } else {
    if (pp != 1)
      return fn.emitError("pp = ")
             << pp << " but the program has no stage.pipeline";
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
    ClassBuilder cb(w, b, device, gradientBucketBytes);
    if (failed(cb.run(chunks, ids, shape, p)))
      return failure();
    w.classes.push_back(cb.take());
  }
  return w;
}
