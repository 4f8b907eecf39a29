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

sym::Expr
StageDialect::getNumElementsOf(Type type,
                               llvm::function_ref<sym::Expr()> compute) {
  {
    llvm::sys::SmartScopedReader<true> lock(numElementsMutex);
    auto it = numElements.find(type);
    if (it != numElements.end())
      return it->second;
  }
  sym::Expr n = compute();
  llvm::sys::SmartScopedWriter<true> lock(numElementsMutex);
  return numElements.try_emplace(type, std::move(n)).first->second;
}

void StageDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "Stage/Dialect/Stage/IR/StageOps.cpp.inc"
      >();
}
