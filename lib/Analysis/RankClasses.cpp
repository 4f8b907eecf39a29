//===- RankClasses.cpp - The ranks that run the same program --------------===//

#include "Stage/Analysis/RankClasses.h"

#include "Stage/Analysis/CostAnalysis.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::stage;

namespace {
/// The loops of a chunk's body: a micro-batch loop or a serving op.
struct ChunkLoops {
  MicrobatchesOp microbatches;
  ServeOp serve;

  explicit ChunkLoops(Operation *chunk) {
    for (Operation &op : chunk->getRegion(0).front()) {
      if (auto mb = dyn_cast<MicrobatchesOp>(op); mb && !microbatches)
        microbatches = mb;
      if (auto s = dyn_cast<ServeOp>(op); s && !serve)
        serve = s;
    }
  }

  /// Found once per chunk while a SymbolicCache lives (the analyses ask
  /// for every chunk of every plan).
  static ChunkLoops of(Operation *chunk) {
    if (!SymbolicCache::active())
      return ChunkLoops(chunk);
    static const char tag = 0;
    return *memoizeDerived<ChunkLoops>(&tag, chunk,
                                       [&] { return ChunkLoops(chunk); });
  }
};
} // namespace

MicrobatchesOp mlir::stage::getMicrobatches(Operation *chunk) {
  return ChunkLoops::of(chunk).microbatches;
}

ServeOp mlir::stage::getServe(Operation *chunk) {
  return ChunkLoops::of(chunk).serve;
}

static StepStructure computeStepStructure(func::FuncOp fn) {
  StepStructure s;
  Block &entry = fn.getBody().front();
  auto pipes = entry.getOps<PipelineOp>();
  if (pipes.empty()) {
    RankClass c;
    c.chunks.push_back(fn);
    c.chunkIds.push_back(0);
    s.classes.push_back(std::move(c));
  } else {
    PipelineOp pipe = *pipes.begin();
    s.kind = pipe.getSchedule();
    s.stages = pipe.getNumPhysicalStages();
    s.virtualStages = pipe.getVirtualStages();
    s.classes.resize(s.stages);
    for (auto [p, c] : llvm::enumerate(s.classes))
      c.stage = int64_t(p);
    for (auto [j, st] : llvm::enumerate(getPipelineStages(pipe))) {
      RankClass &c = s.classes[pipe.getPhysicalStage(int64_t(j))];
      c.chunks.push_back(st);
      c.chunkIds.push_back(int64_t(j));
      ArrayRef<int64_t> l = st.getLayers();
      c.layers.push_back({l[0], l[1]});
    }
  }
  for (const RankClass &c : s.classes)
    for (Operation *chunk : c.chunks) {
      if (MicrobatchesOp mb = getMicrobatches(chunk))
        // Each of DualPipe's two copies runs half of them.
        s.microBatches = isMirrored(s.kind) ? mb.getCount().getValue() * 2
                                            : mb.getCount().getValue();
      if (ServeOp serve = getServe(chunk)) {
        s.microBatches = serve.getMicrobatches().getValue();
        s.serving = true;
      }
    }
  return s;
}

std::shared_ptr<const StepStructure>
mlir::stage::getStepStructure(func::FuncOp fn) {
  static const char tag = 0;
  return memoizeDerived<StepStructure>(
      &tag, fn.getOperation(), [&] { return computeStepStructure(fn); });
}

namespace {
/// Whether the bodies of chunks `a` and `b` are the same IR but for the
/// peers and channels of their sends and receives (which pick and pair the
/// messages of traces, and which no analysis of costs, times or memory
/// reads but for whether the peer is the rank itself): the same ops in the same
/// order, with the same attributes, types and operands (values numbered in
/// definition order; values from outside the chunks must be the same).
bool sameBody(Operation *a, Operation *b) {
  SmallVector<Operation *> opsA, opsB;
  // In definition order: an op, then what its regions hold.
  a->walk<WalkOrder::PreOrder>([&](Operation *op) { opsA.push_back(op); });
  b->walk<WalkOrder::PreOrder>([&](Operation *op) { opsB.push_back(op); });
  if (opsA.size() != opsB.size())
    return false;
  llvm::DenseMap<Value, Value> same; // b's values by a's
  auto blocksMatch = [&](Operation *x, Operation *y) {
    if (x->getNumRegions() != y->getNumRegions())
      return false;
    for (auto [rx, ry] : llvm::zip(x->getRegions(), y->getRegions())) {
      if (rx.getBlocks().size() != ry.getBlocks().size())
        return false;
      for (auto [bx, by] : llvm::zip(rx, ry)) {
        if (bx.getNumArguments() != by.getNumArguments())
          return false;
        for (auto [vx, vy] : llvm::zip(bx.getArguments(), by.getArguments())) {
          if (vx.getType() != vy.getType())
            return false;
          same[vx] = vy;
        }
      }
    }
    return true;
  };
  // The chunks themselves differ in their stage and layers.
  for (auto [x, y] : llvm::zip(opsA, opsB)) {
    if (!blocksMatch(x, y))
      return false;
    if (x == a)
      continue;
    if (x->getName() != y->getName() ||
        x->getNumOperands() != y->getNumOperands() ||
        x->getResultTypes() != y->getResultTypes())
      return false;
    for (auto [vx, vy] : llvm::zip(x->getOperands(), y->getOperands())) {
      auto it = same.find(vx);
      if (it == same.end() ? vx != vy : it->second != vy)
        return false;
    }
    auto attrs = [](Operation *op) {
      SmallVector<NamedAttribute> kept;
      for (NamedAttribute n : op->getAttrDictionary())
        if (!isa<SendOp, RecvOp>(op) ||
            (n.getName() != "channel" && n.getName() != "shift"))
          kept.push_back(n);
      return kept;
    };
    // A message to the same rank (a V's turn) is a hand-over in memory.
    if (attrs(x) != attrs(y) || isLocalHandoff(x) != isLocalHandoff(y))
      return false;
    for (auto [vx, vy] : llvm::zip(x->getResults(), y->getResults()))
      same[vx] = vy;
  }
  return true;
}

/// Per chunk of a function, its twin (getTwinChunk).
struct Twins {
  llvm::DenseMap<Operation *, Operation *> of;

  explicit Twins(func::FuncOp fn) {
    // Chunks with the same ops and types hash alike; of those, the bodies
    // that are the same IR are twins.
    llvm::DenseMap<unsigned, SmallVector<Operation *, 2>> byHash;
    fn.walk([&](PipelineStageOp chunk) {
      llvm::hash_code h = llvm::hash_value(0);
      chunk->walk([&](Operation *op) {
        h = llvm::hash_combine(h, op->getName().getAsOpaquePointer(),
                               op->getNumOperands());
        for (Type t : op->getResultTypes())
          h = llvm::hash_combine(h, t.getAsOpaquePointer());
      });
      SmallVector<Operation *, 2> &firsts = byHash[unsigned(size_t(h))];
      Operation *twin = chunk;
      for (Operation *first : firsts)
        if (sameBody(first, chunk)) {
          twin = first;
          break;
        }
      if (twin == chunk.getOperation())
        firsts.push_back(chunk);
      of[chunk] = twin;
    });
  }
};
} // namespace

Operation *mlir::stage::getTwinChunk(Operation *chunk) {
  if (!SymbolicCache::active())
    return chunk;
  auto fn = chunk->getParentOfType<func::FuncOp>();
  if (!fn)
    return chunk;
  static const char tag = 0;
  std::shared_ptr<const Twins> twins =
      memoizeDerived<Twins>(&tag, fn.getOperation(), [&] { return Twins(fn); });
  auto it = twins->of.find(chunk);
  return it == twins->of.end() ? chunk : it->second;
}
