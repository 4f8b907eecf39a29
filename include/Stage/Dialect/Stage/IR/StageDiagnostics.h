//===- StageDiagnostics.h - Where errors about options point ----*- C++ -*-===//
//
// An error about a pass or translation option has no op to point at; at the
// module's location the diagnostic would print the module's first line, a
// long `module attributes {...}`. Such errors name the input file alone.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_DIALECT_STAGE_IR_STAGEDIAGNOSTICS_H
#define STAGE_DIALECT_STAGE_IR_STAGEDIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"

namespace mlir::stage {

/// The location of an error about the options applied to `root`: its
/// file without a line (`model.mlir:0:0`), or unknown.
Location getOptionLoc(Operation *root);

/// An error about the options applied to `root` (a module).
InFlightDiagnostic emitOptionError(Operation *root);

} // namespace mlir::stage

#endif // STAGE_DIALECT_STAGE_IR_STAGEDIAGNOSTICS_H
