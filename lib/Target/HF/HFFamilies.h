//===- HFFamilies.h - The model families the importer reads -----*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_HF_HFFAMILIES_H
#define STAGE_LIB_TARGET_HF_HFFAMILIES_H

#include "ConfigReader.h"

#include "Stage/Models/ModelConfig.h"

#include "llvm/ADT/ArrayRef.h"

namespace mlir::stage {

/// One supported `architectures[0]` / `model_type`, and how its config's
/// fields become a ModelConfig.
struct HFFamily {
  const char *architecture;
  const char *modelType;
  void (*read)(ConfigReader &, ModelConfig &);
};

/// Every supported family, in the order the README lists them.
llvm::ArrayRef<HFFamily> getHFFamilies();

/// Fields that change nothing the cost model counts (epsilons, RoPE bases,
/// token ids, framework settings); every family accepts them.
void markCostFreeFields(ConfigReader &r);

} // namespace mlir::stage

#endif // STAGE_LIB_TARGET_HF_HFFAMILIES_H
