//===- InitAll.h - Everything the tools register ----------------*- C++ -*-===//

#ifndef STAGE_INITALL_H
#define STAGE_INITALL_H

#include "Stage/Conversion/Passes.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Target/Chakra/ChakraTranslation.h"
#include "Stage/Target/HF/HFImport.h"
#include "Stage/Transforms/Passes.h"
#include "Stage/Target/Report/ReportTranslation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

namespace mlir::stage {

/// The stage dialect, and what the frontends' IR arrives in.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<StageDialect, func::FuncDialect, arith::ArithDialect,
                  math::MathDialect, linalg::LinalgDialect,
                  tensor::TensorDialect, shard::ShardDialect,
                  tosa::TosaDialect>();
}

inline void registerAllPasses() {
  registerStagePasses();
  registerStagePipelines();
  registerInferPipeline();
  registerStageConversionPasses();
  registerConversionPipelines();
}

inline void registerAllTranslations() {
  registerHFImportTranslation();
  registerToChakraTranslation();
  registerToReportTranslation();
}

} // namespace mlir::stage

#endif // STAGE_INITALL_H
