//===- StageDialect.cpp - The stage dialect -------------------------------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::stage;

#include "Stage/Dialect/Stage/IR/StageOpsDialect.cpp.inc"
#include "Stage/Dialect/Stage/IR/StageOpsEnums.cpp.inc"
#include "Stage/Dialect/Stage/IR/StageInterfaces.cpp.inc"

void StageDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "Stage/Dialect/Stage/IR/StageOps.cpp.inc"
      >();
}
