//===- DeviceModel.h - The device a time is computed for --------*- C++ -*-===//
//
// The analyses' name for a device profile (Stage/Support/DeviceProfile.h):
// peak rates, memory, the node and the network, and their efficiency terms.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_DEVICEMODEL_H
#define STAGE_ANALYSIS_DEVICEMODEL_H

#include "Stage/Support/DeviceProfile.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::stage {

using DeviceModel = ::stage::DeviceProfile;

/// A shipped profile (`profiles/NAME.json`): a100-40gb, a100-80gb, h100,
/// h800, h200, b200, mi300x.
std::optional<DeviceModel> getDevicePreset(llvm::StringRef name);
/// "a100-40gb, a100-80gb, b200, ...".
std::string getDevicePresetNames();
/// The profile a time is stated on when no device is named: h100.
const DeviceModel &getDefaultDevice();

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_DEVICEMODEL_H
