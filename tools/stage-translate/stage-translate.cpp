//===- stage-translate.cpp - Imports and exports of stage IR --------------===//

#include "Stage/InitAll.h"
#include "Stage/Tools/ToolSetup.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  mlir::stage::setBugReportMessage();
  mlir::stage::handleOutputErrors(argc, argv);
  mlir::stage::hideLibraryOptions();
  // `--threads=N` (trace encoding threads) is also an LLVM option name:
  // read its value here; LLVM's parser accepts the flag itself.
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    unsigned n;
    if ((arg.consume_front("--threads=") || arg.consume_front("-threads=")) &&
        !arg.getAsInteger(10, n))
      mlir::stage::setTraceThreads(n);
  }
  auto &options = llvm::cl::getRegisteredOptions();
  if (auto it = options.find("threads"); it != options.end()) {
    it->second->setDescription(
        "--stage-to-chakra: encoding threads (default: all cores)");
    it->second->setHiddenFlag(llvm::cl::NotHidden);
  }
  mlir::stage::registerAllTranslations();
  mlir::stage::setDiagnosticDefaults();
  bool failed = mlir::failed(mlir::mlirTranslateMain(
      argc, argv,
      "stage translations: model import, reports, Chakra traces\n"));
  return failed || mlir::stage::reportWasOverLimit();
}
