//===- ToolSetup.cpp - What the stage tools set up before parsing ---------===//

#include "Stage/Tools/ToolSetup.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/PrettyStackTrace.h"

using namespace mlir;

void mlir::stage::hideLibraryOptions() {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *o = entry.second;
    bool generic = llvm::any_of(o->Categories, [](llvm::cl::OptionCategory *c) {
      return c->getName() == "Generic Options";
    });
    if (!generic)
      o->setHiddenFlag(llvm::cl::Hidden);
  }
}

void mlir::stage::setDiagnosticDefaults() {
  registerMLIRContextCLOptions();
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("mlir-print-op-on-diagnostic");
  if (it != options.end())
    static_cast<llvm::cl::opt<bool> *>(it->second)->setInitialValue(false);
}

void mlir::stage::setBugReportMessage() {
  llvm::setBugReportMsg(
      "PLEASE report this crash as a stage bug (not an LLVM one), with the "
      "command line and the input files: an input that crashes stage is a "
      "stage bug even when the input is wrong.\n");
}
