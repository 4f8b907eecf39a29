//===- NodeEmitter.h - The nodes of one rank class --------------*- C++ -*-===//
//
// Appends the Chakra nodes of ops to one rank class's trace: repeats are
// unrolled layer by layer, a node depends on the nodes that produced its
// operands (views produce no node and pass their producers on), the first
// nodes of a step also wait for the previous step's last node (`barrier`),
// and communication ops form one chain per rank, so every member of a group
// issues its collectives in the same order. The schedule expander
// (Workload.cpp) says which block runs when; a GradientObserver hears when
// backward values are complete (GradientBuckets.h).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRA_NODEEMITTER_H
#define STAGE_LIB_TARGET_CHAKRA_NODEEMITTER_H

#include "Workload.h"

#include "Stage/Analysis/BackwardSplit.h"
#include "Stage/Analysis/ExpertRouting.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Support/TimeModel.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <functional>
#include <map>

namespace mlir::stage::chakra {

using Deps = SmallVector<uint32_t, 4>;

/// Whether a collective's group spans pipeline stages (its axes name pp).
inline bool spansPipelineStages(CollectiveOpInterface comm) {
  return llvm::is_contained(comm.getAxesAttr(),
                            StringAttr::get(comm->getContext(), "pp"));
}

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

/// Hears, during a backward step, which values are complete.
class GradientObserver {
public:
  virtual ~GradientObserver() = default;
  /// Layer `slice` (of `slices`) of each of `stacks` (stacked results of a
  /// repeat) is complete, with the producers in `deps`.
  virtual LogicalResult onLayer(ArrayRef<Value> stacks, ArrayRef<Deps> deps,
                                int64_t slice, int64_t slices) = 0;
  /// Every layer of `stack` has been reported.
  virtual void onStackDone(Value stack) = 0;
  /// `v` is complete (an op's result, or a value the step passes through).
  virtual LogicalResult onValue(Value v) = 0;
};

/// What a split backward's input-gradient step computed that its weight-
/// gradient step reads: per value, depth of nested repeats and layer
/// iteration there (flattened over the enclosing ones), its producers.
using SavedValues = std::map<std::tuple<const void *, size_t, int64_t>, Deps>;

class NodeEmitter {
public:
  NodeEmitter(Workload &w, const sym::Bindings &b, const DeviceModel *device)
      : w(w), bindings(&b), device(device) {}

  /// Sizes evaluate under `b` from now on (a decode step binds its index);
  /// `b` must outlive its use.
  void setBindings(const sym::Bindings &b) { bindings = &b; }

  /// The value of `e` under the bindings, an error at `at` naming `what`
  /// otherwise.
  FailureOr<uint64_t> eval(Operation *at, const sym::Expr &e, StringRef what);
  /// The producers the consumers of `values` wait for.
  Deps depsOf(ValueRange values);

  LogicalResult emitBlock(Block &block);
  LogicalResult emitOp(Operation *op);

  /// The handoff of serving group `group`'s KV cache (a send after its
  /// prefill, a receive before its decode), outside the step's nodes and
  /// the communication chain.
  uint32_t addHandoff(NodeKind kind, int64_t group, Deps deps);
  /// A compute node not of an op (gradient accumulation), of `elements`
  /// vector FLOPs and `bytes`, writing `outBytes`.
  uint32_t addVectorNode(StringRef name, uint64_t elements, uint64_t bytes,
                         Deps deps, uint64_t outBytes = 0);
  /// What `op`'s results hold, with --io-info (else 0).
  uint64_t resultBytes(Operation *op);
  /// The node of communication op `op` with `deps` and `bytes`, named
  /// `phaseName:op`.
  FailureOr<uint32_t> addComm(Operation *op, Deps deps, uint64_t bytes,
                              StringRef phaseName);

  ClassTrace take() { return std::move(trace); }

  /// What each value's consumers wait for.
  DenseMap<Value, Produced> env;
  /// The first node of the schedule's current step, and the node the
  /// step's first nodes wait for (-1: none).
  uint32_t stepStart = 0;
  int64_t barrier = -1;
  /// After a pair of steps run together, the last node of the first.
  int64_t pairBarrier = -1;
  /// Another node the step's first nodes wait for: the KV cache handed to
  /// a decode group (-1: none).
  int64_t arrival = -1;
  /// The last node of the schedule's step (gradient reductions excluded:
  /// the next step's compute does not wait for them).
  int64_t lastStepNode = -1;
  /// While set, nodes added are gradient reductions, outside the step.
  bool addingReduction = false;
  /// The micro-batch the step runs (send/recv tags) and their count.
  int64_t microbatch = 0, microbatches = 1;
  /// The phase that names the nodes: fwd, bwd, opt.
  const char *phase = "fwd";
  /// Told of completed values during a backward step; null otherwise.
  GradientObserver *observer = nullptr;
  /// Ops the current step leaves out (a token sent back after the last
  /// decode step, which no step would receive).
  llvm::SmallPtrSet<Operation *, 4> skipped;
  /// Sends whose message a later step receives (a sampled token fed to the
  /// next decode step): their tags are those of `microbatch + sendAhead`.
  llvm::SmallPtrSet<Operation *, 4> aheadSends;
  int64_t sendAhead = 0;

  /// During a step of a split backward (zero-bubble schedules): the split,
  /// which of its two steps runs, and what the input-gradient step left
  /// for the weight gradients (written in the first, read in the second).
  const BackwardSplit *split = nullptr;
  bool weightStep = false;
  SavedValues *saved = nullptr;

  /// What the traces overlap: with `tp`, collectives form one chain per
  /// communicator group (sends one of their own) rather than one per rank;
  /// with `fsdp`, a layer's parameter gathers and gradient reduce-scatters
  /// are one collective each, the gathers issued when the layer before
  /// starts.
  OverlapKinds overlap;

  /// What a collective across pipeline stages waits for (the schedule's
  /// sends): a rank runs one communication at a time, and a member whose
  /// collective started early would hold back the messages the others
  /// need to reach theirs.
  Deps acrossStagesAfter;

  /// Values handed over in memory between two chunks of this rank (shift 0
  /// sends), by channel and micro-batch.
  std::map<std::pair<int64_t, int64_t>, Deps> localHandoffs;

  size_t getNumNodes() const { return trace.nodes.size(); }
  const TraceNode &getNode(uint32_t id) const { return trace.nodes[id]; }

private:
  /// Whether the current step runs `op` (all of them unless split).
  bool runs(Operation *op) const {
    return !split || split->runsIn(op, weightStep);
  }
  /// Under a split: the input-gradient step saves `v` if the weight step
  /// reads it; the weight step restores it.
  void keepForWeightStep(Value v);
  void restoreForWeightStep(ValueRange values);
  uint32_t addNode(TraceNode node);
  LogicalResult emitRepeat(RepeatOp op);
  LogicalResult emitCompute(Operation *op, Cost cost);
  LogicalResult emitComm(Operation *op);
  uint32_t addCollective(std::string name, int commType, ArrayAttr axes,
                         Deps deps, uint64_t bytes);
  /// Makes node `n` wait for the last node of communication chain `chain`
  /// and become it.
  void joinChain(TraceNode &n, int chain);
  void endChain(int chain, uint32_t id) { lastComm[chain] = id; }
  /// One collective for `ops` (of one kind and group): their bytes summed,
  /// waiting for all their operands and `deps`; `bindCoalesced` makes it
  /// what their results' consumers wait for.
  FailureOr<uint32_t> addCoalesced(ArrayRef<Operation *> ops, Deps deps);
  void bindCoalesced(ArrayRef<Operation *> ops, uint32_t id);
  int groupOf(ArrayAttr axes);
  /// A kernel's `duration_micros` on the device (0 without one).
  uint64_t micros(double contraction, double other, double bytes,
                  const ::stage::MatmulShape &shape = {}) const;

  Workload &w;
  const sym::Bindings *bindings;
  const DeviceModel *device;
  /// The module's routing, read at the first routed op.
  std::shared_ptr<const RoutingModel> routing;
  ClassTrace trace;
  /// The last node of each chain of communication: per group (and one for
  /// sends) under overlap `tp`, else one per rank (key -1).
  llvm::DenseMap<int, uint32_t> lastComm;
  /// Per group, the collectives emitted so far.
  llvm::DenseMap<int, int64_t> collectivesOf;
  /// Ops emitted as part of a coalesced collective.
  llvm::SmallPtrSet<Operation *, 16> coalesced;
  /// Called with the next compute node added (then cleared): a layer's
  /// prefetch of the next layer's gathers.
  std::function<LogicalResult(uint32_t)> onFirstKernel;
  /// The layer iteration being emitted at each depth of nested repeats
  /// (flattened over the enclosing ones), outermost first.
  SmallVector<int64_t, 4> iterations = {0};
};

} // namespace mlir::stage::chakra

#endif // STAGE_LIB_TARGET_CHAKRA_NODEEMITTER_H
