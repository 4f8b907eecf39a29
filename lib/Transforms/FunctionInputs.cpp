//===- FunctionInputs.cpp - Function arguments as stage.input -------------===//

#include "FunctionInputs.h"

#include "Stage/Dialect/Stage/IR/StageOps.h"

using namespace mlir;
using namespace mlir::stage;

void mlir::stage::convertArgumentsToInputs(func::FuncOp fn) {
  Block &entry = fn.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  llvm::BitVector erased(entry.getNumArguments());
  for (BlockArgument arg : entry.getArguments()) {
    if (!isa<SymTensorType>(arg.getType()))
      continue;
    auto in = InputOp::create(b, arg.getLoc(), arg.getType(),
                              "arg" + std::to_string(arg.getArgNumber()));
    arg.replaceAllUsesWith(in);
    erased.set(arg.getArgNumber());
  }
  (void)fn.eraseArguments(erased);
}
