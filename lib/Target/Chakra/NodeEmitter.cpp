//===- NodeEmitter.cpp - The nodes of one rank class ----------------------===//

#include "NodeEmitter.h"

#include "Stage/Analysis/CommAnalysis.h"
#include "Stage/Analysis/ExpertRouting.h"
#include "Stage/Support/TimeModel.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

FailureOr<uint64_t> NodeEmitter::eval(Operation *at, const sym::Expr &e,
                                      StringRef what) {
  sym::Result<sym::Rational> v = e.evaluateRational(*bindings);
  if (!v)
    return at->emitError(what) << ": " << v.error();
  std::optional<int64_t> c = v->ceilToInt64();
  if (!c || *c < 0)
    return at->emitError(what) << ": " << e.str() << " = " << v->str()
                               << " is not a non-negative 64-bit value";
  return uint64_t(*c);
}

Deps NodeEmitter::depsOf(ValueRange values) {
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

uint32_t NodeEmitter::addNode(TraceNode node) {
  // A node waiting on nothing of its own step waits for the previous step.
  bool inStep =
      llvm::any_of(node.deps, [&](uint32_t d) { return d >= stepStart; });
  for (int64_t wait : {barrier, pairBarrier, arrival})
    if (!inStep && wait >= 0 && !llvm::is_contained(node.deps, uint32_t(wait)))
      node.deps.push_back(uint32_t(wait));
  trace.nodes.push_back(std::move(node));
  if (!addingReduction)
    lastStepNode = int64_t(trace.nodes.size()) - 1;
  return trace.nodes.size() - 1;
}

uint32_t NodeEmitter::addHandoff(NodeKind kind, int64_t group, Deps deps) {
  TraceNode n;
  n.kind = kind;
  n.name = std::string(phase) + (kind == NodeKind::Send ? ":kv_send" : ":kv_recv");
  n.handoff = true;
  n.tag = group;
  n.deps = std::move(deps);
  trace.nodes.push_back(std::move(n));
  return trace.nodes.size() - 1;
}

int NodeEmitter::groupOf(ArrayAttr axes) {
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

LogicalResult NodeEmitter::emitCompute(Operation *op, Cost cost) {
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
  ::stage::MatmulShape shape;
  if (std::optional<MatmulGrid> g = getMatmulGrid(op)) {
    FailureOr<uint64_t> rows = eval(op, g->rows, "rows"),
                        columns = eval(op, g->columns, "columns"),
                        batch = eval(op, g->batch, "products");
    if (failed(rows) || failed(columns) || failed(batch))
      return failure();
    shape = {double(*rows), double(*columns), double(*batch)};
  }
  // The node's FLOPs and bytes are the mean rank's (exact in totals); its
  // duration is the busiest rank's, reading the experts it reaches.
  double contraction = double(*c), other = double(*o), bytes = double(*b);
  if (std::optional<RoutedOp> routed = getRoutedOp(op); routed && device) {
    if (!routing)
      routing = std::make_shared<RoutingModel>(op);
    routing->applyUnder(*bindings, *routed, 1, contraction, other, bytes);
  }
  n.micros = micros(contraction, other, bytes, shape);
  n.deps = deps;
  n.dataDeps = uint32_t(deps.size());
  n.outBytes = resultBytes(op);
  uint32_t id = addNode(std::move(n));
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
    id = addCollective((Twine(phase) + ":all_reduce").str(), AllReduce, c.axes,
                       {id}, *bytes);
  }
  for (Value r : op->getResults())
    env[r] = Produced{{id}, {}};
  return success();
}

uint32_t NodeEmitter::addCollective(std::string name, int commType,
                                    ArrayAttr axes, Deps deps, uint64_t bytes) {
  TraceNode n;
  n.kind = NodeKind::Collective;
  n.name = std::move(name);
  n.commType = commType;
  n.group = groupOf(axes);
  // Its place in the group's sequence, the same on every member (they
  // issue one sequence): distinguishes two collectives of one group.
  n.tag = collectivesOf[n.group]++;
  n.bytes = bytes;
  n.deps = std::move(deps);
  n.dataDeps = uint32_t(n.deps.size());
  int chain = overlap.tp ? n.group : -1;
  joinChain(n, chain);
  uint32_t id = addNode(std::move(n));
  endChain(chain, id);
  return id;
}

void NodeEmitter::joinChain(TraceNode &n, int chain) {
  auto it = lastComm.find(chain);
  if (it != lastComm.end() && !llvm::is_contained(n.deps, it->second))
    n.deps.push_back(it->second);
}

LogicalResult NodeEmitter::emitComm(Operation *op) {
  auto comm = cast<CollectiveOpInterface>(op);
  FailureOr<uint64_t> bytes = eval(op, comm.getCommBytes(), "message size");
  if (failed(bytes))
    return failure();
  if (isa<LocalSplitOp>(op)) {
    env[op->getResult(0)] = Produced{depsOf(op->getOperands()), {}};
    return success();
  }
  // Shift 0: a later chunk of this rank takes the value from memory.
  if (auto send = dyn_cast<SendOp>(op); send && isLocalHandoff(send)) {
    localHandoffs[{int64_t(send.getChannel()), microbatch}] =
        depsOf(op->getOperands());
    return success();
  }
  if (auto recv = dyn_cast<RecvOp>(op); recv && isLocalHandoff(recv)) {
    auto it = localHandoffs.find({int64_t(recv.getChannel()), microbatch});
    if (it == localHandoffs.end())
      return op->emitError("receives from a chunk of its own rank that has "
                           "not run: the schedule is out of order");
    env[recv.getResult()] = Produced{std::move(it->second), {}};
    localHandoffs.erase(it);
    return success();
  }
  Deps deps = depsOf(op->getOperands());
  if (spansPipelineStages(comm))
    for (uint32_t d : acrossStagesAfter)
      if (!llvm::is_contained(deps, d))
        deps.push_back(d);
  FailureOr<uint32_t> id = addComm(op, std::move(deps), *bytes, phase);
  if (failed(id))
    return failure();
  trace.nodes[*id].outBytes = resultBytes(op);
  for (Value r : op->getResults())
    env[r] = Produced{{*id}, {}};
  return success();
}

FailureOr<uint32_t> NodeEmitter::addComm(Operation *op, Deps deps,
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
  n.dataDeps = uint32_t(n.deps.size());
  bool slot = !isa<RecvOp>(op);
  // Sends keep their order among themselves (their own chain under `tp`).
  int chain = overlap.tp ? -2 : -1;
  if (slot)
    joinChain(n, chain);
  if (auto send = dyn_cast<SendOp>(op)) {
    n.kind = NodeKind::Send;
    n.shift = send.getShift();
    n.tag = int64_t(send.getChannel()) * microbatches + microbatch +
            (aheadSends.contains(op) ? sendAhead : 0);
  } else {
    auto recv = cast<RecvOp>(op);
    n.kind = NodeKind::Recv;
    n.shift = recv.getShift();
    n.tag = int64_t(recv.getChannel()) * microbatches + microbatch;
  }
  if (n.tag >= (int64_t(1) << 31))
    return op->emitError("send/recv tag ")
           << n.tag << " does not fit in 31 bits";
  uint32_t id = addNode(std::move(n));
  if (slot)
    endChain(chain, id);
  return id;
}

LogicalResult NodeEmitter::emitRepeat(RepeatOp op) {
  FailureOr<uint64_t> count =
      eval(op, op.getCount().getValue(), "repeat count");
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
  // ZeRO-3 under overlap `fsdp`: per kind and group, a layer's parameter
  // gathers (of slices of weights) and gradient reduce-scatters (yielded as
  // the layer's gradients) as one collective each, like FSDP's flat
  // parameter of a unit.
  SmallVector<SmallVector<Operation *>> gathers, scatters;
  if (overlap.fsdp)
    for (Operation &inner : body.without_terminator()) {
      if (!runs(&inner))
        continue;
      // A layer's own: the slice of a weight, the gradient it yields.
      bool gather =
          isParameterGather(&inner) &&
          cast<AllGatherOp>(inner).getInput().getParentBlock() == &body;
      bool scatter = isGradientScatter(&inner) &&
                     llvm::all_of(inner.getUsers(), [&](Operation *u) {
                       return u == yield.getOperation();
                     });
      if (!gather && !scatter)
        continue;
      auto &sets = gather ? gathers : scatters;
      auto same = [&](const SmallVector<Operation *> &set) {
        return set.front()->getName() == inner.getName() &&
               cast<CollectiveOpInterface>(set.front()).getAxesAttr() ==
                   cast<CollectiveOpInterface>(inner).getAxesAttr();
      };
      auto it = llvm::find_if(sets, same);
      if (it == sets.end())
        sets.push_back({&inner});
      else
        it->push_back(&inner);
      coalesced.insert(&inner);
    }
  // The next layer's gathers, issued when this layer's first kernel starts
  // (FSDP's prefetch one layer ahead): one node per set.
  SmallVector<uint32_t> prefetched;
  // Under a split backward, the layers' results this step completes.
  SmallVector<unsigned> reported;
  for (unsigned s = 0; s < nStacked; ++s)
    if (!split ||
        split->isWeightStepValue(yield.getValues()[nCarry + s]) == weightStep)
      reported.push_back(s);
  iterations.push_back(0);
  for (uint64_t k = 0; k < *count; ++k) {
    uint64_t i = op.getReverse() ? *count - 1 - k : k;
    iterations.back() =
        iterations[iterations.size() - 2] * int64_t(*count) + int64_t(i);
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
    if (split && weightStep)
      restoreForWeightStep(body.getArguments());
    else
      for (BlockArgument arg : body.getArguments())
        keepForWeightStep(arg);
    for (auto [g, set] : llvm::enumerate(gathers)) {
      FailureOr<uint32_t> id =
          prefetched.empty() ? addCoalesced(set, {}) : prefetched[g];
      if (failed(id))
        return failure();
      bindCoalesced(set, *id);
    }
    prefetched.clear();
    if (!gathers.empty() && k + 1 < *count && !onFirstKernel)
      onFirstKernel = [&](uint32_t kernel) -> LogicalResult {
        for (ArrayRef<Operation *> set : gathers) {
          FailureOr<uint32_t> id = addCoalesced(set, {kernel});
          if (failed(id))
            return failure();
          prefetched.push_back(*id);
        }
        return success();
      };
    if (failed(emitBlock(body)))
      return failure();
    if (onFirstKernel && prefetched.empty() && !gathers.empty() &&
        k + 1 < *count) {
      // A layer without kernels: its successor's gathers go now.
      auto hook = std::move(onFirstKernel);
      onFirstKernel = nullptr;
      if (failed(hook(uint32_t(getNumNodes() - 1))))
        return failure();
    }
    for (ArrayRef<Operation *> set : scatters) {
      FailureOr<uint32_t> id = addCoalesced(set, {});
      if (failed(id))
        return failure();
      bindCoalesced(set, *id);
    }
    for (unsigned c = 0; c < nCarry; ++c)
      carried[c] = depsOf(yield.getValues()[c]);
    for (unsigned s = 0; s < nStacked; ++s)
      stacked[s][i] = depsOf(yield.getValues()[nCarry + s]);
    // This layer's slices of the stacked results are complete.
    if (observer) {
      SmallVector<Value> stacks;
      SmallVector<Deps> deps;
      for (unsigned s : reported) {
        stacks.push_back(op.getResult(nCarry + s));
        deps.push_back(stacked[s][i]);
      }
      if (failed(observer->onLayer(stacks, deps, int64_t(i), int64_t(*count))))
        return failure();
    }
  }
  iterations.pop_back();
  if (observer)
    for (unsigned s : reported)
      observer->onStackDone(op.getResult(nCarry + s));
  for (unsigned c = 0; c < nCarry; ++c)
    env[op.getResult(c)] = Produced{carried[c], {}};
  for (unsigned s = 0; s < nStacked; ++s) {
    Produced p;
    p.slices = std::move(stacked[s]);
    env[op.getResult(nCarry + s)] = std::move(p);
  }
  return success();
}

LogicalResult NodeEmitter::emitOp(Operation *op) {
  if (isa<ParamOp, KVCacheOp, InputOp, LossOp, YieldOp, func::ReturnOp>(op) ||
      skipped.contains(op))
    return success();
  if (auto rep = dyn_cast<RepeatOp>(op))
    return emitRepeat(rep);
  if (isa<CollectiveOpInterface>(op))
    return emitComm(op);
  if (isa<MicrobatchesOp, ServeOp>(op))
    return op->emitError("nested micro-batch loops cannot be emitted");
  if (auto c = dyn_cast<CostOpInterface>(op))
    return emitCompute(op, c.getCost());
  return op->emitError("cannot be written to a trace");
}

LogicalResult NodeEmitter::emitBlock(Block &block) {
  for (Operation &op : block) {
    if (!runs(&op) || coalesced.contains(&op))
      continue;
    if (split && weightStep)
      restoreForWeightStep(op.getOperands());
    size_t before = getNumNodes();
    if (failed(emitOp(&op)))
      return failure();
    if (onFirstKernel)
      for (size_t id = before; id < getNumNodes(); ++id)
        if (trace.nodes[id].kind == NodeKind::Compute) {
          auto hook = std::move(onFirstKernel);
          onFirstKernel = nullptr;
          if (failed(hook(uint32_t(id))))
            return failure();
          break;
        }
    for (Value r : op.getResults())
      keepForWeightStep(r);
    if (observer)
      for (Value r : op.getResults())
        if ((!split || split->isWeightStepValue(r) == weightStep) &&
            failed(observer->onValue(r)))
          return failure();
  }
  return success();
}

FailureOr<uint32_t> NodeEmitter::addCoalesced(ArrayRef<Operation *> ops,
                                              Deps deps) {
  uint64_t bytes = 0;
  for (Operation *op : ops) {
    FailureOr<uint64_t> b = eval(
        op, cast<CollectiveOpInterface>(op).getCommBytes(), "message size");
    if (failed(b))
      return failure();
    bytes += *b;
    for (uint32_t d : depsOf(op->getOperands()))
      if (!llvm::is_contained(deps, d))
        deps.push_back(d);
  }
  return addComm(ops.front(), std::move(deps), bytes, phase);
}

void NodeEmitter::bindCoalesced(ArrayRef<Operation *> ops, uint32_t id) {
  for (Operation *op : ops)
    for (Value r : op->getResults()) {
      env[r] = Produced{{id}, {}};
      keepForWeightStep(r);
    }
}

void NodeEmitter::keepForWeightStep(Value v) {
  if (!split || weightStep || !saved)
    return;
  if (llvm::any_of(v.getUsers(),
                   [&](Operation *u) { return split->runsIn(u, true); }))
    (*saved)[{v.getAsOpaquePointer(), iterations.size(), iterations.back()}] =
        depsOf(v);
}

void NodeEmitter::restoreForWeightStep(ValueRange values) {
  if (!saved)
    return;
  for (Value v : values)
    // A value of an enclosing block was saved at its own depth.
    for (size_t depth = iterations.size(); depth > 0; --depth) {
      auto found =
          saved->find({v.getAsOpaquePointer(), depth, iterations[depth - 1]});
      if (found != saved->end()) {
        env[v] = Produced{found->second, {}};
        break;
      }
    }
}

uint64_t NodeEmitter::micros(double contraction, double other, double bytes,
                             const ::stage::MatmulShape &shape) const {
  if (!device)
    return 0;
  double seconds =
      ::stage::kernelSeconds(contraction, other, bytes, 1, *device, shape);
  return std::max<uint64_t>(1, uint64_t(std::ceil(seconds * 1e6)));
}

uint64_t NodeEmitter::resultBytes(Operation *op) {
  if (!w.ioInfo)
    return 0;
  uint64_t total = 0;
  for (Value r : op->getResults())
    if (auto t = dyn_cast<SymTensorType>(r.getType()))
      if (sym::Result<int64_t> n = t.getNumElements().evaluate(*bindings))
        total += uint64_t(*n) * uint64_t(t.getElementBytes());
  return total;
}

uint32_t NodeEmitter::addVectorNode(StringRef name, uint64_t elements,
                                    uint64_t bytes, Deps deps,
                                    uint64_t outBytes) {
  TraceNode n;
  n.name = name.str();
  n.dataDeps = uint32_t(deps.size());
  n.outBytes = outBytes;
  // Consumers divide by these: never 0.
  n.flops = std::max<uint64_t>(elements, 1);
  n.bytes = std::max<uint64_t>(bytes, 1);
  n.micros = micros(0, double(elements), double(bytes));
  n.deps = std::move(deps);
  return addNode(std::move(n));
}
