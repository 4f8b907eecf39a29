//===- ModelConfig.cpp - Which layer is which -----------------------------===//

#include "Stage/Models/ModelConfig.h"

#include <algorithm>

using namespace mlir::stage;

bool ModelConfig::isMoELayer(int64_t i) const {
  if (!moe || i < moe->firstDenseLayers)
    return false;
  if (std::find(moe->denseLayers.begin(), moe->denseLayers.end(), i) !=
      moe->denseLayers.end())
    return false;
  return i % moe->layerPeriod == moe->layerPhase;
}
