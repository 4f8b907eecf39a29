//===- InitAll.h - Everything the tools register ----------------*- C++ -*-===//

#ifndef STAGE_INITALL_H
#define STAGE_INITALL_H

#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Target/Chakra/ChakraTranslation.h"
#include "Stage/Target/HF/HFImport.h"
#include "Stage/Transforms/Passes.h"
#include "Stage/Target/Report/ReportTranslation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::stage {

inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<StageDialect, func::FuncDialect>();
}

inline void registerAllPasses() {
  registerStagePasses();
  registerStagePipelines();
}

inline void registerAllTranslations() {
  registerHFImportTranslation();
  registerToChakraTranslation();
  registerToReportTranslation();
}

} // namespace mlir::stage

#endif // STAGE_INITALL_H
