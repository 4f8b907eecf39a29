//===- LayerScope.h - The body of a stack of identical layers ---*- C++ -*-===//

#ifndef STAGE_LIB_MODELS_LAYERSCOPE_H
#define STAGE_LIB_MODELS_LAYERSCOPE_H

#include "Stage/Dialect/Stage/IR/StageBuilder.h"
#include "Stage/Models/ModelConfig.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::stage::models {

/// Symbols of a model's dimensions.
namespace symbols {
inline sym::Expr S(const char *name) { return sym::Expr::symbol(name); }
} // namespace symbols

/// Builds the body of a `stage.repeat` over `count` layers (or periods of
/// layers). Each weight the
/// body asks for becomes a function-level `stage.param` stacked over the
/// layers (`[count, ...]`) and a slice argument of the body, so the IR holds
/// one layer whatever the depth.
class LayerScope {
public:
  /// `outer` inserts at function level, before the repeat.
  LayerScope(OpBuilder &outer, Location loc, sym::Expr count,
             std::string prefix, Type paramType, Value carriedInit);
  /// A layer outside any stack: its weights are plain `stage.param`s and
  /// its ops go where `outer` inserts (Zamba2's layers with a shared
  /// block).
  LayerScope(OpBuilder &outer, Location loc, std::string prefix,
             Type paramType, Value input);

  /// The graph builder for the body.
  GraphBuilder &body() { return inner; }
  /// The layer's input (the carried value).
  Value input() { return block ? block->getArgument(0) : init; }

  /// The prefix of the weights asked for next (a period's next layer).
  void setPrefix(std::string p) { prefix = std::move(p); }

  /// A weight of one layer with shape `dims`; `name` is relative to the
  /// scope's prefix.
  Value weight(StringRef name, ArrayRef<sym::Expr> dims, StringRef group);

  /// Creates the repeat op at the outer insertion point with `output` as the
  /// carried result of one iteration (`period` layers); returns the
  /// repeat's result (`output` itself for a layer outside any stack).
  Value finish(Value output, int64_t period = 1);

private:
  OpBuilder &outer;
  Location loc;
  sym::Expr count;
  std::string prefix;
  Type paramType;
  Value init;
  Block *block; // null: a layer outside any stack
  OpBuilder innerBuilder;
  GraphBuilder inner;
  SmallVector<Value> stacks;
};

/// The element type of weights and activations for a precision.
Type getComputeType(MLIRContext *ctx, Precision p);

/// Layer blocks (AttentionBlocks.cpp, FeedForwardBlocks.cpp, SSMBlocks.cpp).
/// Each returns its contribution to the residual stream.
FailureOr<Value> buildAttention(LayerScope &scope, const ModelConfig &config,
                                const BuildOptions &options, Value x,
                                const LayerKind &kind);
Value buildFeedForward(LayerScope &scope, const ModelConfig &config, Value x,
                       bool moe);
/// A Mamba or Mamba-2 mixer (SSMBlocks.cpp).
Value buildMamba(LayerScope &scope, const ModelConfig &config, Value x);
/// The MLP's nonlinearity on `x` (FeedForwardBlocks.cpp).
Value activate(GraphBuilder &g, Activation a, Value x);

/// Zamba2's layers that use a shared block (SharedBlocks.cpp). Each
/// block's weights are made once, at its first use, as function-level
/// `stage.param`s; every use reads them (its gradient is their sum over
/// the uses). A use's own weights, and its layer's Mamba-2 mixer, are
/// weights of that layer alone.
class SharedBlockLayers {
public:
  /// Ops go where `b` inserts (the function's body); `embeddings` are the
  /// token embeddings every use joins to its input.
  SharedBlockLayers(OpBuilder &b, Location loc, const ModelConfig &config,
                    Type paramType, Value embeddings)
      : b(b), loc(loc), c(config), paramType(paramType),
        embeddings(embeddings) {}

  /// Layer `layer` (a use of a shared block) from `x`. Its ops carry the
  /// layer's index (`stage.layer`) for stage-pipeline.
  Value build(int64_t layer, Value x);

private:
  Value sharedBlock(int64_t block, int64_t layer, Value x);
  Value blockWeight(int64_t block, StringRef name, ArrayRef<sym::Expr> dims,
                    StringRef group);

  OpBuilder &b;
  Location loc;
  const ModelConfig &c;
  Type paramType;
  Value embeddings;
  llvm::StringMap<Value> weights;
};

/// Adds `bias` (shape: the trailing dims of `x`) to `x` when `enabled`.
Value addBias(LayerScope &scope, Value x, StringRef name,
              ArrayRef<sym::Expr> dims, StringRef group, bool enabled);

} // namespace mlir::stage::models

#endif // STAGE_LIB_MODELS_LAYERSCOPE_H
