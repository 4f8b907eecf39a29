//===- Passes.h - Passes of stage -------------------------------*- C++ -*-===//

#ifndef STAGE_TRANSFORMS_PASSES_H
#define STAGE_TRANSFORMS_PASSES_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/Pass/Pass.h"

namespace mlir::stage {

#define GEN_PASS_DECL
#include "Stage/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Stage/Transforms/Passes.h.inc"

/// Registers `stage-train`.
void registerStagePipelines();
/// Registers `stage-infer`.
void registerInferPipeline();

} // namespace mlir::stage

#endif // STAGE_TRANSFORMS_PASSES_H
