//===- TargetOptions.h - Options shared by the translations -----*- C++ -*-===//

#ifndef STAGE_TARGET_TARGETOPTIONS_H
#define STAGE_TARGET_TARGETOPTIONS_H

#include "Stage/Analysis/DeviceModel.h"
#include "Stage/Support/SymExpr.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::stage {

/// Registers `--bind=NAME=VALUE,...` once for all translations.
void registerBindingOption();

/// The module's bindings with `--bind` applied; errors are emitted at the
/// module.
FailureOr<sym::Bindings> getEffectiveBindings(ModuleOp module);

/// Registers `--device` (a preset) and the roofline overrides
/// `--peak-flops`, `--vector-flops`, `--memory-bandwidth`,
/// `--link-bandwidth`, `--device-memory`, and the network's
/// `--gpus-per-node`, `--network-bandwidth`, `--link-latency`,
/// `--network=FILE.json`, once for all translations.
void registerDeviceOptions();

/// The device the options describe: a preset with overrides, or, with no
/// preset named, `fallback` (none if empty) with the overrides. Errors at
/// the module.
FailureOr<std::optional<DeviceModel>> getDeviceModel(ModuleOp module,
                                                     StringRef fallback);

/// Applies a network description (JSON: `gpus_per_node`, `link_bandwidth`
/// and `network_bandwidth` in bytes/s per direction, `latency` in seconds
/// per message, `all_to_all` "ring" or "direct") to `d`; the error names the
/// file and the bad key, empty when there is none.
std::string applyNetworkFile(llvm::StringRef path, DeviceModel &d);

/// `80GiB`, `80GB`, `1.5e9`: bytes; none if the text is no size.
std::optional<double> parseByteSize(StringRef text);

/// mlir-translate shows the failing op with every error: for an error at
/// the module, the whole program. The translations show locations only.
void reportLocationsOnly(MLIRContext *ctx);

} // namespace mlir::stage

#endif // STAGE_TARGET_TARGETOPTIONS_H
