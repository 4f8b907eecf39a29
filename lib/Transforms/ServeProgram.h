//===- ServeProgram.h - Building blocks of serving programs -----*- C++ -*-===//
//
// stage-serve reads a forward program once (ForwardProgram: the ops that
// move into the serving regions, its attentions and their caches, its
// prompt tokens and LM head) and builds from clones of it the prefill, the
// decode steps (Serve.cpp) or the mixed iterations of continuous batching
// (ContinuousBatching.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TRANSFORMS_SERVEPROGRAM_H
#define STAGE_LIB_TRANSFORMS_SERVEPROGRAM_H

#include "LatentAttention.h"

#include "mlir/IR/IRMapping.h"

#include <optional>

namespace mlir::stage {

/// The channel of the sampled tokens a pipeline's last stage sends back to
/// its first (0 carries activations forward, 1 their gradients).
constexpr int64_t kTokenChannel = 2;

/// The serving plan of one program.
struct ServeOptions {
  int64_t microBatches = 1;
  /// N: the caches hold S + N positions.
  int64_t decodeSteps = 0;
  bool prefill = true, decode = false;
  /// The program is one stage of a pipeline (pp > 1).
  bool pipelined = false;
  /// Continuous batching: prompt tokens per mixed iteration (0: none).
  int64_t chunk = 0;
  /// Disaggregated serving: the caches move between rank groups.
  bool handoff = false;
};

/// One attention of the forward graph and the caches its keys and values go
/// to: one each, or for latent attention (`latent` >= 0) one cache of the
/// latent and rotary key (`keyCache`).
struct CachedAttention {
  AttentionOp op;
  std::string keyCache, valueCache;
  int latent = -1;
};

/// A recurrence of the forward graph (a state-space layer's scan or its
/// convolution) and the cache its state carries over in between calls.
struct CarriedState {
  Operation *op;
  std::string cache;
};

/// What the serving program is built from: the forward graph, read once.
struct ForwardProgram {
  SmallVector<Operation *> ops;
  SmallVector<CachedAttention> attentions;
  SmallVector<CarriedState> states;
  SmallVector<LatentAttention> latents;
  /// The prompt tokens (the first stage only).
  InputOp tokens;
  /// The op producing the logits (the last stage only): an einsum with the
  /// LM head weight, perhaps followed by elementwise ops up to `logits`.
  EinsumOp head;
  Value logits;
};

/// The positions the LM head samples from: `size` of them from `offset`
/// along the dimension of extent `extent`.
struct SampledPositions {
  sym::Expr extent, offset, size;
};

/// Reads the forward graph of `body`: which ops move into the serving
/// regions, its attentions (a latent attention's up-projection split), its
/// prompt tokens and its LM head. Removes the loss.
FailureOr<ForwardProgram> readForward(Block &body, Operation *terminator);

/// The cache of one attention's keys or values (entries of `entry` dims,
/// positions at 1): S + N positions (S without decode steps), stacked over
/// the layer stacks it runs in.
SymTensorType cacheType(AttentionOp a, ArrayRef<sym::Expr> entry,
                        Type elementType, Operation *program, bool decodes);

/// The cache of a recurrence's state: per sequence, the scan's N values per
/// channel or the convolution's last K - 1 inputs, stacked over the layer
/// stacks it runs in.
SymTensorType stateCacheType(Operation *recurrence, Operation *program);

/// Points the recurrences of the forward graph's clone (through `map`) at
/// their state caches.
void carryStates(const ForwardProgram &f, IRMapping &map);

/// `v` (new positions along dimension 1) written into the cache `name` at
/// `offset`; the cache's positions [0, offset + n) as a view (with
/// `window`, the last W positions).
Value writeToCache(OpBuilder &b, Location loc, Value v, StringRef name,
                   const sym::Expr &offset, ExprAttr window = {});

/// Writes the keys and values of every attention of `f` (its clone, through
/// `map`) into their caches at `offset`; a decode step's latent attention
/// takes the absorbed form.
void writeCaches(ForwardProgram &f, IRMapping &map, const sym::Expr &offset,
                 bool decode);

/// Greedy sampling after the (cloned) LM head; with `window`, the head
/// first takes those positions only.
FailureOr<Value> sampleToken(EinsumOp head, Value logits,
                             std::optional<SampledPositions> window);

/// Clones the forward ops of `f` to the end of `block`, ends it with a
/// stage.yield, and applies `substitutions` in turn to the clones' shapes.
YieldOp cloneForward(Block &block, const ForwardProgram &f, IRMapping &map,
                     ArrayRef<sym::Substitution> substitutions);

/// A `stage.repeat count step "step"` with its (empty) body block, in a new
/// block of `region` that ends with a yield. The loop carries one value per
/// `carried` input, read by a `stage.input` of that name and type before it.
RepeatOp createStepLoop(Region &region, Location loc, const sym::Expr &count,
                        StringRef step,
                        ArrayRef<std::pair<StringRef, Type>> carried = {});

/// A sampled token's send to, or receive from, the other end of a pipeline.
SendOp sendToken(OpBuilder &b, Location loc, Value token, GridOp grid);
RecvOp receiveToken(OpBuilder &b, Location loc, Type type, GridOp grid);

/// Continuous batching: the decode region of `serve` as J mixed iterations.
LogicalResult buildMixedIterations(ServeOp serve, ForwardProgram &f,
                                   const ServeOptions &o, GridOp grid);

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_SERVEPROGRAM_H
