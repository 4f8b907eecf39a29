//===- TransformerBuilder.h - Training forward graphs -----------*- C++ -*-===//

#ifndef STAGE_MODELS_TRANSFORMERBUILDER_H
#define STAGE_MODELS_TRANSFORMERBUILDER_H

#include "Stage/Models/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::stage {

/// The training forward graph of a decoder-only transformer, tokens to loss,
/// as a module with one function `@forward`: embedding, one `stage.repeat`
/// per run of identical layers, final norm, LM head, cross-entropy. All
/// dimensions are symbols; the module's bindings hold their values. With
/// `GraphKind::Layer`, `@layer` maps hidden states `x : [B, S, D]` through
/// one decoder layer (an MoE layer when the model has them). Fails
/// (with an error at `loc`) when the configuration is inconsistent.
OwningOpRef<ModuleOp> buildTransformer(MLIRContext *ctx, Location loc,
                                       const ModelConfig &config,
                                       const BuildOptions &options);

} // namespace mlir::stage

#endif // STAGE_MODELS_TRANSFORMERBUILDER_H
