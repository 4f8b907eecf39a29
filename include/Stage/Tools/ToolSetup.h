//===- ToolSetup.h - What the stage tools set up before parsing -*- C++ -*-===//

#ifndef STAGE_TOOLS_TOOLSETUP_H
#define STAGE_TOOLS_TOOLSETUP_H

namespace llvm {
class ToolOutputFile;
class StringRef;
} // namespace llvm

namespace mlir::stage {

/// Hides, from `--help`, the options registered before `main` runs: the
/// shared LLVM library brings hundreds of code-generation flags that mean
/// nothing here. They still parse, and `--help-hidden` lists them. Call it
/// first in `main`, before the tool registers its own options.
void hideLibraryOptions();

/// An error names its location and shows that source line; printing the
/// whole failing op as well (MLIR's default) would dump a training step of
/// thousands of lines for a module-level error.
/// `--mlir-print-op-on-diagnostic` turns it back on.
void setDiagnosticDefaults();

/// A crash (an internal error, a signal) ends with stage's request for a
/// bug report instead of LLVM's "submit a bug report to llvm-project": the
/// bug is most likely ours. Call it first in `main`.
void setBugReportMessage();

/// A failed write of the tool's `-o` output (a full disk, a file-size
/// limit) ends with one error naming the file, and the partial file is
/// removed: LLVM's streams report it as "IO failure on output stream"
/// without the name, as a fatal error when the stream is destroyed. A
/// file-size limit (SIGXFSZ) fails the write instead of killing the tool
/// halfway. Call it first in `main`, with the command line.
void handleOutputErrors(int argc, char **argv);

/// Flushes `file` (written as `path`) and keeps it; false, after one error
/// naming the file, when a write failed (the partial file is then removed).
bool keepOutput(llvm::ToolOutputFile &file, llvm::StringRef path);

} // namespace mlir::stage

#endif // STAGE_TOOLS_TOOLSETUP_H
