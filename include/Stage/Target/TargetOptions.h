//===- TargetOptions.h - Options shared by the translations -----*- C++ -*-===//

#ifndef STAGE_TARGET_TARGETOPTIONS_H
#define STAGE_TARGET_TARGETOPTIONS_H

#include "Stage/Support/SymExpr.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::stage {

/// Registers `--bind=NAME=VALUE,...` once for all translations.
void registerBindingOption();

/// The module's bindings with `--bind` applied; errors are emitted at the
/// module.
FailureOr<sym::Bindings> getEffectiveBindings(ModuleOp module);

/// mlir-translate shows the failing op with every error: for an error at
/// the module, the whole program. The translations show locations only.
void reportLocationsOnly(MLIRContext *ctx);

} // namespace mlir::stage

#endif // STAGE_TARGET_TARGETOPTIONS_H
