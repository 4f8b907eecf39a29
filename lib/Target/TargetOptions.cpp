//===- TargetOptions.cpp - Options shared by the translations -------------===//

#include "Stage/Target/TargetOptions.h"

#include "Stage/Analysis/Bindings.h"

#include "llvm/Support/CommandLine.h"

using namespace mlir;
using namespace mlir::stage;

namespace {
struct BindingOption {
  llvm::cl::list<std::string> bind{
      "bind",
      llvm::cl::desc("Override symbol bindings, as in --bind=B=16,tp=8 "
                     "(repeatable; later values win)"),
      llvm::cl::value_desc("NAME=VALUE,...")};
};
} // namespace

static BindingOption &bindingOption() {
  static BindingOption option;
  return option;
}

void mlir::stage::registerBindingOption() { (void)bindingOption(); }

FailureOr<sym::Bindings> mlir::stage::getEffectiveBindings(ModuleOp module) {
  sym::Bindings overrides;
  for (const std::string &text : bindingOption().bind) {
    std::string err = parseBindingList(text, overrides);
    if (!err.empty())
      return module.emitError("--bind: ") << err;
  }
  return getModuleBindings(module, overrides);
}

void mlir::stage::reportLocationsOnly(MLIRContext *ctx) {
  ctx->printOpOnDiagnostic(false);
}
