//===- stage-opt.cpp - The stage optimizer driver -------------------------===//

#include "Stage/InitAll.h"
#include "Stage/Tools/ToolSetup.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace mlir::stage::test {
void registerTestShardingRulesPass();
} // namespace mlir::stage::test

int main(int argc, char **argv) {
  mlir::stage::setBugReportMessage();
  mlir::stage::handleOutputErrors(argc, argv);
  mlir::stage::hideLibraryOptions();
  mlir::DialectRegistry registry;
  mlir::stage::registerAllDialects(registry);
  mlir::stage::registerAllPasses();
  mlir::stage::test::registerTestShardingRulesPass();
  mlir::stage::setDiagnosticDefaults();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "stage optimizer: symbolic tensor graphs of LLM workloads\n",
      registry));
}
