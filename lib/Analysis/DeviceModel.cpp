//===- DeviceModel.cpp - The device a time is computed for ----------------===//

#include "Stage/Analysis/DeviceModel.h"

using namespace mlir;
using namespace mlir::stage;

std::optional<DeviceModel> mlir::stage::getDevicePreset(llvm::StringRef name) {
  return ::stage::getShippedProfile(name);
}

std::string mlir::stage::getDevicePresetNames() {
  return ::stage::getShippedProfileNames();
}

const DeviceModel &mlir::stage::getDefaultDevice() {
  static const DeviceModel device = *getDevicePreset("h100");
  return device;
}
