//===- HFImport.h - HuggingFace config.json to stage IR ---------*- C++ -*-===//

#ifndef STAGE_TARGET_HF_HFIMPORT_H
#define STAGE_TARGET_HF_HFIMPORT_H

#include "Stage/Models/ModelConfig.h"

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

namespace mlir::stage {

/// The most layers a config may have unless the caller allows more: the
/// importer lists each layer's kind (docs/Limits.md).
constexpr int64_t kDefaultMaxImportedLayers = int64_t(1) << 20;

/// Reads a HuggingFace `config.json` of a supported family, of at most
/// `maxLayers` layers. Errors name the offending field and are emitted at
/// `loc`. A field the family does not read whose name says it sizes
/// something is an error, or a warning with `allowUnreadFields`.
FailureOr<ModelConfig>
parseHFConfig(StringRef json, Location loc,
              int64_t maxLayers = kDefaultMaxImportedLayers,
              bool allowUnreadFields = false);

/// Registers `--import-hf-config`.
void registerHFImportTranslation();

} // namespace mlir::stage

#endif // STAGE_TARGET_HF_HFIMPORT_H
