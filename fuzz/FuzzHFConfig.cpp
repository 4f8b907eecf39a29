//===- FuzzHFConfig.cpp - libFuzzer target: the HF config importer --------===//
//
// Any bytes as a HuggingFace config.json: read, and when it is a model,
// built into a stage module and verified. Nothing may crash or hang; a
// config is refused with a diagnostic or imported.
//
//===----------------------------------------------------------------------===//

#include "FuzzContext.h"

#include "Stage/Models/TransformerBuilder.h"
#include "Stage/Target/HF/HFImport.h"

#include "mlir/IR/Verifier.h"

#include <cstdint>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext *ctx = &stage_fuzz::getContext();
  stage_fuzz::Quiet quiet(*ctx);
  Location loc = UnknownLoc::get(ctx);
  // Few layers and a short sequence: what is fuzzed is the reading, not
  // the size of the model (which the importer's limits bound).
  FailureOr<stage::ModelConfig> config = stage::parseHFConfig(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), loc,
      /*maxLayers=*/64);
  if (failed(config))
    return 0;
  stage::BuildOptions build;
  build.batch = 2;
  build.seq = 16;
  OwningOpRef<ModuleOp> module =
      stage::buildTransformer(ctx, loc, *config, build);
  if (module)
    (void)verify(*module);
  return 0;
}
