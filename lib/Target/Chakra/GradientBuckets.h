//===- GradientBuckets.h - Gradients reduced as they appear -----*- C++ -*-===//
//
// Gradients are followed while the backward steps run: each layer's
// gradient is added into its running sum as soon as it exists, and in the
// last micro-batch the collectives that reduce it (data-parallel
// all-reduce or reduce-scatter, per layer of a layer stack) join the chain
// right there, so they overlap the rest of the backward pass as in PyTorch
// DDP or Megatron-LM's overlapped gradient reduction. As there, gradients
// are reduced in buckets: the pieces that become ready are collected per
// kind of collective until they reach the bucket size, then reduced by one
// collective of their summed size.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRA_GRADIENTBUCKETS_H
#define STAGE_LIB_TARGET_CHAKRA_GRADIENTBUCKETS_H

#include "NodeEmitter.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::stage::chakra {

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
  bool first = false; // the chunk's first micro-batch: it starts the sums
  bool last = false;  // the chunk's last micro-batch: the sums are reduced
  DenseMap<Value, SmallVector<unsigned, 1>> grads; // yielded value -> indices
  DenseSet<Value> delivered;
};

class GradientBucketer : public GradientObserver {
public:
  /// Reductions go out in buckets of at least `bucketBytes` (0: one per
  /// gradient and layer); without `reduceEarly` (overlap without `grad`)
  /// they wait until after the backward, in program order.
  GradientBucketer(NodeEmitter &emitter, uint64_t bucketBytes,
                   bool reduceEarly = true)
      : emitter(emitter), bucketBytes(bucketBytes), reduceEarly(reduceEarly) {}

  /// Follows the gradients of `chunk`'s micro-batch loop (none without
  /// one): the chunk's index is the order of the calls.
  void addChunk(Block *chunk, MicrobatchesOp loop);
  /// The collectives issued during the backward: the emitter skips them
  /// after the loop.
  bool isReducedEarly(Operation *op) const { return reducedEarly.contains(op); }

  /// A backward step of chunk `index` begins: the values its region yields
  /// are the gradients; the chunk's first micro-batch starts their sums, its
  /// last has them reduced.
  void beginBackward(unsigned index, Operation *yield, bool firstMicrobatch,
                     bool lastMicrobatch);
  /// The step is over: gradients it passed through are ready, and the last
  /// buckets are reduced.
  /// Under a split backward, `delivers` says which gradients the step
  /// completes.
  LogicalResult endBackward(Operation *yield,
                            function_ref<bool(Value)> delivers = nullptr);

  LogicalResult onLayer(ArrayRef<Value> stacks, ArrayRef<Deps> deps,
                        int64_t slice, int64_t slices) override;
  void onStackDone(Value stack) override;
  LogicalResult onValue(Value v) override;

private:
  /// Gradients `grads` (their layer `slice` of `slices`, or all of them for
  /// -1) became ready with producers `deps`: accumulated into their sums
  /// after the first micro-batch, and in the last one handed to the buckets.
  LogicalResult onGradientReady(ArrayRef<unsigned> grads, ArrayRef<Deps> deps,
                                int64_t slice, int64_t slices);
  LogicalResult addPiece(const Piece &p);
  LogicalResult flush(size_t bucket);

  NodeEmitter &emitter;
  uint64_t bucketBytes;
  bool reduceEarly;
  std::vector<ChunkGradients> chunks;
  DenseSet<Operation *> reducedEarly;
  std::vector<Bucket> buckets; // the open ones, oldest first
  BackwardWatch watch;
};

} // namespace mlir::stage::chakra

#endif // STAGE_LIB_TARGET_CHAKRA_GRADIENTBUCKETS_H
