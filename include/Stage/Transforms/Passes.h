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

/// Registers `stage-train` and `stage-symbolize`.
void registerStagePipelines();

/// Registers `stage-symbolize="B=8,S=128,..."`, which names the constant
/// extents of an imported graph (its options are the symbols' values, so it
/// is registered as a pipeline that parses them).
void registerSymbolizePipeline();

} // namespace mlir::stage

#endif // STAGE_TRANSFORMS_PASSES_H
