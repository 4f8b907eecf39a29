//===- DeviceModel.cpp - Roofline parameters of accelerators --------------===//

#include "Stage/Analysis/DeviceModel.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::stage;

// Datasheet figures: dense (no sparsity) bf16 tensor throughput, non-tensor
// fp32 throughput for vector work, HBM bandwidth and capacity, and the
// per-direction scale-up bandwidth (NVLink / Infinity Fabric). The H100's
// "80 GB" is 81,559 MiB as its driver reports it. Each sits in a node of 8
// with one 400 Gb/s NIC per device (DGX/HGX and MI300X platforms): 50 GB/s
// per direction across nodes, and 0.5 us per message (a ring step).
static const DeviceModel kPresets[] = {
    {"h100", 989e12, 67e12, 3.35e12, 450e9, 81559.0 * 1024 * 1024, 8, 50e9,
     5e-7},
    {"h200", 989e12, 67e12, 4.8e12, 450e9, 141e9, 8, 50e9, 5e-7},
    {"b200", 2250e12, 80e12, 8.0e12, 900e9, 192e9, 8, 50e9, 5e-7},
    {"mi300x", 1307e12, 163e12, 5.3e12, 448e9, 192e9, 8, 50e9, 5e-7},
};

double DeviceModel::seconds(double contraction, double other,
                            double bytes) const {
  double compute = contraction / matmulFlops + other / vectorFlops;
  return std::max(compute, bytes / memoryBytes);
}

std::string DeviceModel::timingKey() const {
  double numbers[] = {matmulFlops, vectorFlops,         memoryBytes,
                      linkBytes,   double(gpusPerNode), networkBytes,
                      latency,     double(ringAllToAll)};
  return std::string(reinterpret_cast<const char *>(numbers), sizeof(numbers));
}

std::optional<DeviceModel> mlir::stage::getDevicePreset(llvm::StringRef name) {
  for (const DeviceModel &d : kPresets)
    if (name.equals_insensitive(d.name))
      return d;
  return std::nullopt;
}

std::string mlir::stage::getDevicePresetNames() {
  std::string s;
  for (const DeviceModel &d : kPresets)
    s += (s.empty() ? "" : ", ") + d.name;
  return s;
}
