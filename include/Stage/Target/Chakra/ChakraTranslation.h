//===- ChakraTranslation.h - stage IR to Chakra traces ----------*- C++ -*-===//

#ifndef STAGE_TARGET_CHAKRA_CHAKRATRANSLATION_H
#define STAGE_TARGET_CHAKRA_CHAKRATRANSLATION_H

#include "Stage/Analysis/DeviceModel.h"
#include "Stage/Support/SymExpr.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <vector>

namespace mlir::stage {

/// How a trace set is built; the defaults are `--stage-to-chakra`'s.
struct TraceOptions {
  /// Gradients reduced in buckets of at least this many bytes (0: one
  /// collective per gradient and layer).
  uint64_t bucketBytes = 25 << 20;
  /// Inputs and outputs on every node (ASTRA-sim's memory tracker).
  bool ioInfo = false;
  /// Nodes carry roofline durations on this device (none: no durations).
  const DeviceModel *device = nullptr;
  /// The most ops a rank may execute per step (about its trace's nodes),
  /// checked before any trace is built (docs/Limits.md).
  double maxOpsPerRank = kDefaultMaxOpsPerRank;
  static constexpr double kDefaultMaxOpsPerRank = 5e7;
  /// A serving program's decode steps, each under its own bindings over
  /// the module's (a request stream's iterations: RequestReport.cpp);
  /// empty: the step loop's count, its index bound per step.
  std::vector<sym::Bindings> servingSteps;
};

/// Writes the trace set of a step (under its module's bindings) to `dir`,
/// as `--stage-to-chakra --output-dir=dir` does; returns the rank count.
FailureOr<int64_t> writeTraces(ModuleOp module, llvm::StringRef dir,
                               const TraceOptions &o = {});

/// Registers `--stage-to-chakra`.
void registerToChakraTranslation();

/// The encoding threads of `--stage-to-chakra` (0: all cores).
void setTraceThreads(unsigned n);

} // namespace mlir::stage

#endif // STAGE_TARGET_CHAKRA_CHAKRATRANSLATION_H
