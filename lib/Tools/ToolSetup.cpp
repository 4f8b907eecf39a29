//===- ToolSetup.cpp - What the stage tools set up before parsing ---------===//

#include "Stage/Tools/ToolSetup.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/PrettyStackTrace.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

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

namespace {
/// The `-o` file of the command line ("-": the standard output).
std::string outputPath = "-";

void onFatalError(void *, const char *reason, bool) {
  llvm::StringRef why(reason);
  if (!why.consume_front("IO failure on output stream: ")) {
    llvm::errs() << "LLVM ERROR: " << reason << "\n";
    return;
  }
  bool toStdout = outputPath == "-";
  llvm::errs() << "error: cannot write "
               << (toStdout ? std::string("the standard output") : outputPath)
               << ": " << why;
  // A partial file is removed; a device or a pipe named by -o is left.
  struct stat st;
  if (!toStdout && ::lstat(outputPath.c_str(), &st) == 0 &&
      S_ISREG(st.st_mode) && ::unlink(outputPath.c_str()) == 0)
    llvm::errs() << " (the partial file was removed)";
  llvm::errs() << "\n";
}
} // namespace

void mlir::stage::handleOutputErrors(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if ((arg == "-o" || arg == "--o") && i + 1 < argc)
      outputPath = argv[++i];
    else if (arg.consume_front("-o=") || arg.consume_front("--o="))
      outputPath = arg.str();
  }
  // LLVM's crash handlers count SIGXFSZ as a crash: install them now (later
  // calls keep them), then ignore it, so that the write fails with EFBIG.
  llvm::sys::PrintStackTraceOnErrorSignal(argv[0]);
  signal(SIGXFSZ, SIG_IGN);
  llvm::install_fatal_error_handler(onFatalError);
}

bool mlir::stage::keepOutput(llvm::ToolOutputFile &file, llvm::StringRef path) {
  file.os().flush();
  if (std::error_code ec = file.os().error()) {
    llvm::errs() << "error: cannot write "
                 << (path == "-" ? std::string("the standard output")
                                 : path.str())
                 << ": " << ec.message() << "\n";
    file.os().clear_error();
    return false;
  }
  file.keep();
  return true;
}
