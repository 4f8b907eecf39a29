//===- GradientBuckets.cpp - Gradients reduced as they appear -------------===//

#include "GradientBuckets.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

LogicalResult GradientBucketer::onValue(Value v) {
  auto it = watch.grads.find(v);
  if (it == watch.grads.end() || !watch.delivered.insert(v).second)
    return success();
  SmallVector<Deps> deps(it->second.size(), emitter.depsOf(v));
  return onGradientReady(it->second, deps, -1, 0);
}

LogicalResult GradientBucketer::onLayer(ArrayRef<Value> stacks,
                                        ArrayRef<Deps> deps, int64_t slice,
                                        int64_t slices) {
  SmallVector<unsigned> grads;
  SmallVector<Deps> gradDeps;
  for (auto [stack, d] : llvm::zip(stacks, deps)) {
    auto it = watch.grads.find(stack);
    if (it == watch.grads.end())
      continue;
    for (unsigned g : it->second) {
      grads.push_back(g);
      gradDeps.push_back(d);
    }
  }
  if (grads.empty())
    return success();
  return onGradientReady(grads, gradDeps, slice, slices);
}

void GradientBucketer::onStackDone(Value stack) {
  if (watch.grads.count(stack))
    watch.delivered.insert(stack);
}

LogicalResult GradientBucketer::addPiece(const Piece &p) {
  Operation *op = watch.chunk->reductions[p.grad][p.step];
  Value input = op->getOperand(0);
  auto it = emitter.env.find(input);
  Deps d = it != emitter.env.end() && p.slice >= 0 &&
                   int64_t(it->second.slices.size()) == p.slices
               ? it->second.slices[p.slice]
               : emitter.depsOf(input);
  auto comm = cast<CollectiveOpInterface>(op);
  FailureOr<uint64_t> bytes =
      emitter.eval(op, comm.getCommBytes(), "message size");
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

LogicalResult GradientBucketer::flush(size_t index) {
  Bucket b = std::move(buckets[index]);
  buckets.erase(buckets.begin() + index);
  emitter.addingReduction = true;
  FailureOr<uint32_t> id = emitter.addComm(
      b.kind, Deps(b.deps.begin(), b.deps.end()), b.bytes, "grad");
  emitter.addingReduction = false;
  if (failed(id))
    return failure();
  ChunkGradients &c = *watch.chunk;
  for (const Piece &p : b.pieces)
    emitter.env[c.reductions[p.grad][p.step]->getResult(0)].part(
        p.slice, p.slices) = {*id};
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

void GradientBucketer::addChunk(Block *chunk, MicrobatchesOp loop) {
  ChunkGradients &c = chunks.emplace_back();
  if (!loop)
    return;
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
  if (!reduceEarly)
    return;
  bool after = false;
  for (Operation &op : *chunk) {
    after |= &op == loop.getOperation();
    if (!after || !isa<CollectiveOpInterface>(op) ||
        isa<LocalSplitOp, SendOp, RecvOp>(op) || op.getNumOperands() != 1)
      continue;
    // A sum across pipeline stages (stage-sum-shared-gradients) waits for
    // the whole backward: the stages' backwards order their gradients
    // differently, and its group must issue them in one order.
    if (spansPipelineStages(cast<CollectiveOpInterface>(op)))
      continue;
    auto it = reduces.find(op.getOperand(0));
    if (it == reduces.end())
      continue;
    unsigned g = it->second;
    if (stacked[g] && !actsPerLayer(&op))
      continue;
    c.reductions[g].push_back(&op);
    reducedEarly.insert(&op);
    reduces[op.getResult(0)] = g;
  }
}

LogicalResult GradientBucketer::onGradientReady(ArrayRef<unsigned> grads,
                                                ArrayRef<Deps> deps,
                                                int64_t slice, int64_t slices) {
  ChunkGradients &c = *watch.chunk;
  // What gradient g's running sum (its layer `slice`) waits for.
  auto sum = [&](unsigned g) -> Deps & {
    return emitter.env[c.loop.getResult(g)].part(slice, slices);
  };
  if (watch.first) {
    for (auto [g, d] : llvm::zip(grads, deps))
      sum(g) = d;
  } else {
    // Every later micro-batch adds its gradients into the sums: one kernel
    // for what became ready together (a layer's gradients).
    uint64_t elements = 0, bytes = 0, written = 0;
    llvm::SmallSetVector<uint32_t, 8> d;
    for (auto [g, gd] : llvm::zip(grads, deps)) {
      FailureOr<uint64_t> n =
          emitter.eval(c.loop, c.types[g].getNumElements(), "gradient size");
      if (failed(n))
        return failure();
      uint64_t part = slice < 0 ? *n : *n / uint64_t(slices);
      elements += part;
      // Read the running sum and the new gradient, write the sum.
      bytes += 3 * part * uint64_t(c.types[g].getElementBytes());
      written += part * uint64_t(c.types[g].getElementBytes());
      d.insert(gd.begin(), gd.end());
      Deps &before = sum(g);
      d.insert(before.begin(), before.end());
    }
    uint32_t id = emitter.addVectorNode("acc:grad_accumulate", elements, bytes,
                                        Deps(d.begin(), d.end()), written);
    for (unsigned g : grads)
      sum(g) = {id};
  }
  if (!watch.last)
    return success();
  // The last micro-batch: reduce these sums now, layer by layer.
  for (unsigned g : grads)
    if (!c.reductions[g].empty() &&
        failed(addPiece(Piece{g, 0, slice, slices})))
      return failure();
  return success();
}

void GradientBucketer::beginBackward(unsigned index, Operation *yield,
                                     bool firstMicrobatch,
                                     bool lastMicrobatch) {
  watch = BackwardWatch();
  watch.chunk = &chunks[index];
  watch.first = firstMicrobatch;
  watch.last = lastMicrobatch;
  for (auto [g, v] : llvm::enumerate(yield->getOperands()))
    watch.grads[v].push_back(unsigned(g));
}

LogicalResult
GradientBucketer::endBackward(Operation *yield,
                              function_ref<bool(Value)> delivers) {
  // Gradients no op of the step produced (an argument passed through).
  for (Value v : yield->getOperands())
    if ((!delivers || delivers(v)) && failed(onValue(v)))
      return failure();
  // The backward pass is over: the last buckets are reduced now.
  while (!buckets.empty())
    if (failed(flush(0)))
      return failure();
  return success();
}
