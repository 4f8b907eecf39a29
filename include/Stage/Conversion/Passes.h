//===- Passes.h - Conversions into stage ------------------------*- C++ -*-===//

#ifndef STAGE_CONVERSION_PASSES_H
#define STAGE_CONVERSION_PASSES_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/Pass/Pass.h"

namespace mlir::stage {

#define GEN_PASS_DECL
#include "Stage/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Stage/Conversion/Passes.h.inc"

/// Registers `stage-import-tosa`: TOSA to linalg on tensors (upstream) and
/// then to stage.
void registerConversionPipelines();

} // namespace mlir::stage

#endif // STAGE_CONVERSION_PASSES_H
