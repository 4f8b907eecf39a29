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

int64_t SharedBlockConfig::useAt(int64_t i) const {
  auto it = std::find(uses.begin(), uses.end(), i);
  return it == uses.end() ? -1 : int64_t(it - uses.begin());
}
