//===- StageDiagnostics.cpp - Where errors about options point ------------===//

#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"

#include "mlir/IR/Location.h"

using namespace mlir;

Location mlir::stage::getOptionLoc(Operation *root) {
  if (auto file = root->getLoc()->findInstanceOf<FileLineColLoc>())
    return FileLineColLoc::get(file.getFilename(), 0, 0);
  return UnknownLoc::get(root->getContext());
}

InFlightDiagnostic mlir::stage::emitOptionError(Operation *root) {
  return emitError(getOptionLoc(root));
}
