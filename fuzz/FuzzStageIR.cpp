//===- FuzzStageIR.cpp - libFuzzer target: the stage dialect's parsers ----===//
//
// Any bytes as an MLIR module with the stage and func dialects loaded: the
// custom assembly of stage's ops, types and attributes (sharding, expressions,
// tensors) is parsed, and what parses is verified (every op verifier) and
// printed. A parse or verifier error is fine; a crash is a bug.
//
//===----------------------------------------------------------------------===//

#include "Stage/Dialect/Stage/IR/StageDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static MLIRContext *ctx = [] {
    // stage's own parsers: the upstream dialects frontends use (linalg,
    // tosa) are upstream's to fuzz.
    auto *c = new MLIRContext(MLIRContext::Threading::DISABLED);
    c->loadDialect<stage::StageDialect, func::FuncDialect>();
    return c;
  }();
  ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
  ParserConfig config(ctx);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), config);
  if (!module)
    return 0;
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  return 0;
}
