//===- FuzzStageIR.cpp - libFuzzer target: the stage dialect's parsers ----===//
//
// Any bytes as an MLIR module with the stage and func dialects loaded: the
// custom assembly of stage's ops, types and attributes (sharding, expressions,
// tensors) is parsed, and what parses is verified (every op verifier) and
// printed. A parse or verifier error is fine; a crash is a bug.
//
//===----------------------------------------------------------------------===//

#include "FuzzContext.h"

#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext *ctx = &stage_fuzz::getContext();
  stage_fuzz::Quiet quiet(*ctx);
  ParserConfig config(ctx);
  // MLIR's lexer relies on the NUL that ends every file buffer; libFuzzer's
  // input has none, so it is copied into a string, which has one.
  std::string source(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, config);
  if (!module)
    return 0;
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  return 0;
}
