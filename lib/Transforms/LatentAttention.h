//===- LatentAttention.h - Latent attention for serving ---------*- C++ -*-===//
//
// DeepSeek's multi-head latent attention (MLA) caches, per token, the
// compressed latent c (kv_lora_rank wide) and the shared rotary key k_pe
// (qk_rope_head_dim), not the per-head keys and values. Decoding uses the
// absorbed form (DeepSeek-V2, section 2.1.3): the key up-projection W_UK is
// applied to the query, attention runs against the cached latent as one
// key/value head, and the value up-projection W_UV to its output, so that
// attention's FLOPs follow the latent width.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TRANSFORMS_LATENTATTENTION_H
#define STAGE_LIB_TRANSFORMS_LATENTATTENTION_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

namespace mlir::stage {

/// The values of one latent attention in the forward graph.
struct LatentAttention {
  AttentionOp op;
  /// The query's no-position and rotary parts, [B, S, H, Dn] and [B, S, H, Dr].
  Value queryNope, queryRope;
  /// The normalized latent [B, S, Kr] and the rotary key [B, S, Dr].
  Value latent, keyRope;
  /// The key and value up-projections, [Kr, H, Dn] and [Kr, H, Dv] (layer
  /// slices of their own weights).
  Value keyUp, valueUp;
};

/// Recognizes latent attention in `body` (the importer's form: keys and
/// values sliced from one up-projection of the latent) and splits that
/// up-projection's weight into its key and value parts, so that decoding
/// can apply each on its own. Leaves other attentions alone.
SmallVector<LatentAttention> splitLatentAttentions(Block &body);

/// The new positions' latent and rotary key as one cache entry per token,
/// [B, n, 1, Kr + Dr], built before `at`.
Value buildLatentEntry(OpBuilder &b, Location loc, Value latent, Value keyRope);

/// Rewrites `op`, a latent attention of a decode step whose cache view of
/// `[B, T, 1, Kr + Dr]` is `cached`, into the absorbed form, and erases
/// what only the old form read.
void absorbLatentAttention(AttentionOp op, const LatentAttention &mapped,
                           Value cached);

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_LATENTATTENTION_H
