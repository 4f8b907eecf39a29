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
#include "llvm/Support/CommandLine.h"

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
  registerStageConversionPasses();
  registerConversionPipelines();
}

inline void registerAllTranslations() {
  registerHFImportTranslation();
  registerToChakraTranslation();
  registerToReportTranslation();
}

/// Hides, from `--help`, the options registered before `main` runs: the
/// shared LLVM library brings hundreds of code-generation flags that mean
/// nothing here. They still parse, and `--help-hidden` lists them. Call it
/// first in `main`, before the tool registers its own options.
inline void hideLibraryOptions() {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *o = entry.second;
    bool generic = llvm::any_of(o->Categories, [](llvm::cl::OptionCategory *c) {
      return c->getName() == "Generic Options";
    });
    if (!generic)
      o->setHiddenFlag(llvm::cl::Hidden);
  }
}

/// An error names its location and shows that source line; printing the
/// whole failing op as well (MLIR's default) would dump a training step of
/// thousands of lines for a module-level error. `--mlir-print-op-on-diagnostic`
/// turns it back on.
inline void setDiagnosticDefaults() {
  registerMLIRContextCLOptions();
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("mlir-print-op-on-diagnostic");
  if (it != options.end())
    static_cast<llvm::cl::opt<bool> *>(it->second)->setInitialValue(false);
}

} // namespace mlir::stage

#endif // STAGE_INITALL_H
