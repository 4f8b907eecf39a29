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

/// `cache[type]`, computed on the first request; `compute` runs unlocked
/// (it may ask for other types' entries).
static sym::Expr cached(llvm::DenseMap<Type, sym::Expr> &cache,
                        llvm::sys::SmartRWMutex<true> &mutex, Type type,
                        llvm::function_ref<sym::Expr()> compute) {
  {
    llvm::sys::SmartScopedReader<true> lock(mutex);
    auto it = cache.find(type);
    if (it != cache.end())
      return it->second;
  }
  sym::Expr n = compute();
  llvm::sys::SmartScopedWriter<true> lock(mutex);
  return cache.try_emplace(type, std::move(n)).first->second;
}

sym::Expr
StageDialect::getNumElementsOf(Type type,
                               llvm::function_ref<sym::Expr()> compute) {
  return cached(numElements, typeCacheMutex, type, compute);
}

sym::Expr
StageDialect::getSizeInBytesOf(Type type,
                               llvm::function_ref<sym::Expr()> compute) {
  return cached(sizeInBytes, typeCacheMutex, type, compute);
}

void StageDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "Stage/Dialect/Stage/IR/StageOps.cpp.inc"
      >();
}
