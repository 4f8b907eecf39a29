//===- DeviceModel.h - Roofline parameters of accelerators ------*- C++ -*-===//

#ifndef STAGE_ANALYSIS_DEVICEMODEL_H
#define STAGE_ANALYSIS_DEVICEMODEL_H

#include "Stage/Dialect/Stage/IR/StageCost.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::stage {

/// A simple roofline: peak rates per second of one device, and the
/// network it sits in (docs/Explore.md): `gpusPerNode` devices share the
/// scale-up links, groups that span nodes run at the scale-out bandwidth.
struct DeviceModel {
  std::string name;
  double matmulFlops;   // dense bf16 on matrix units
  double vectorFlops;   // elementwise on vector units
  double memoryBytes;   // HBM bandwidth
  double linkBytes;     // scale-up link bandwidth per direction
  double memoryCapacity; // HBM size in bytes
  int64_t gpusPerNode = 8;
  double networkBytes = 50e9; // scale-out bandwidth per device and direction
  double latency = 5e-7;      // seconds per message (a ring step)
  /// All-to-all as a ring (each part travels as many hops as its distance,
  /// n/2 times the direct exchange's bytes per link, as ASTRA-sim's default
  /// system runs it) rather than directly between every pair.
  bool ringAllToAll = false;

  /// Seconds for `flops` contraction / `other` FLOPs moving `bytes`: the
  /// slower of compute and memory.
  double seconds(double contraction, double other, double bytes) const;
  /// Every number a time depends on, as bytes (a key for memoized times).
  std::string timingKey() const;
};

/// H100 SXM, H200, B200, MI300X (vendor datasheet figures, dense bf16).
std::optional<DeviceModel> getDevicePreset(llvm::StringRef name);
/// "h100, h200, b200, mi300x".
std::string getDevicePresetNames();

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_DEVICEMODEL_H
