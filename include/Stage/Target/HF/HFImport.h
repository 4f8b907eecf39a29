//===- HFImport.h - HuggingFace config.json to stage IR ---------*- C++ -*-===//

#ifndef STAGE_TARGET_HF_HFIMPORT_H
#define STAGE_TARGET_HF_HFIMPORT_H

#include "Stage/Models/ModelConfig.h"

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

namespace mlir::stage {

/// Reads a HuggingFace `config.json` of a supported family. Errors name the
/// offending field and are emitted at `loc`.
FailureOr<ModelConfig> parseHFConfig(StringRef json, Location loc);

/// Registers `--import-hf-config`.
void registerHFImportTranslation();

} // namespace mlir::stage

#endif // STAGE_TARGET_HF_HFIMPORT_H
