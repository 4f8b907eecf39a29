//===- CommAnalysis.h - Communication of a rank per iteration ---*- C++ -*-===//
//
// What one rank's collectives and point-to-point messages amount to per
// iteration, by collective and grid axes: how many there are, the message
// bytes as a Chakra trace states them (`comm_size`), and the bytes a rank
// sends under ring algorithms (the volume ZeRO and Megatron-LM count):
//
//   all-reduce      2 (n-1)/n * size     reduce-scatter  (n-1)/n * input
//   all-gather      (n-1) * per-rank input  all-to-all   (n-1)/n * buffer
//   send            the message            (recv sends nothing)
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_COMMANALYSIS_H
#define STAGE_ANALYSIS_COMMANALYSIS_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include <string>
#include <vector>

namespace mlir::stage {

struct CommVolume {
  std::string kind;              // "all_reduce", ..., "send", "recv"
  SmallVector<std::string> axes; // the group's grid axes
  sym::Expr count;               // executions per iteration
  sym::Expr messageBytes;        // sum of comm_size
  sym::Expr sentBytes;           // ring-algorithm traffic out of the rank
};

/// A collective an op performs within itself: Megatron-LM's vocabulary-
/// parallel cross-entropy all-reduces three per-token fp32 statistics over
/// the vocabulary's axes (the logits' maximum, the target's logit and the
/// sum of exponentials).
struct ImplicitCollective {
  ArrayAttr axes;
  sym::Expr bytes; // an all-reduce of this size
};
SmallVector<ImplicitCollective> getImplicitCollectives(Operation *op);

/// Bytes one execution of `comm` sends out of its rank (0 for a receive
/// and a local split).
sym::Expr getSentBytes(CollectiveOpInterface comm);

/// ZeRO-3's gather of a weight before its use: an all-gather of a
/// parameter, or of a layer's slice of one in a repeat.
bool isParameterGather(Operation *op);
/// ZeRO's reduce-scatter of a gradient: its result is only a weight
/// gradient a micro-batch loop or a layer of a repeat yields.
bool isGradientScatter(Operation *op);

/// The communication under `roots` (ops run once per iteration), grouped
/// by kind and axes in order of first appearance.
std::vector<CommVolume> getCommVolumes(ArrayRef<Operation *> roots);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_COMMANALYSIS_H
