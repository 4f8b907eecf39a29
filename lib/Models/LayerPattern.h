//===- LayerPattern.h - A model's layers as repeated stacks -----*- C++ -*-===//

#ifndef STAGE_LIB_MODELS_LAYERPATTERN_H
#define STAGE_LIB_MODELS_LAYERPATTERN_H

#include "Stage/Models/ModelConfig.h"
#include "Stage/Support/SymExpr.h"

#include "llvm/ADT/SmallVector.h"

namespace mlir::stage::models {

/// Consecutive layers that become one `stage.repeat`: `count` repetitions
/// of `period` (one layer kind for a stack of identical layers; several for
/// a model whose kinds alternate, such as Gemma-2's sliding and global
/// layers or Jamba's blocks of eight).
struct LayerRun {
  int64_t begin, end; // layer indices [begin, end)
  llvm::SmallVector<LayerKind> period;
  sym::Expr count;
  /// Parameter-name prefix of each layer of the period: `layers`,
  /// `layers[3:61]`, or for periods `layers[0:42:2]`, `layers[1:42:2]`.
  llvm::SmallVector<std::string> prefixes;
  bool hasMoE() const;
};

/// The kind of every layer at sequence length `seq` (a window at least as
/// long as the sequence is full attention).
llvm::SmallVector<LayerKind> getLayerKinds(const ModelConfig &c, int64_t seq);

/// Groups the layers into runs. Runs of identical layers when there are a
/// few (the common shapes get symbolic counts: `L` for one run, `Ld` and
/// `L - Ld` for dense layers followed by MoE layers); otherwise the period
/// that repeats from the first layer and leaves the fewest runs after its
/// last full repetition, then those runs. With shared blocks (Zamba2) the
/// layers that use one are in no run: the runs are the layers between.
llvm::SmallVector<LayerRun> getLayerRuns(const ModelConfig &c, int64_t seq);

} // namespace mlir::stage::models

#endif // STAGE_LIB_MODELS_LAYERPATTERN_H
