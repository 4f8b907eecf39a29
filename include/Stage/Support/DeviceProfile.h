//===- DeviceProfile.h - An accelerator and its node, as data ---*- C++ -*-===//
//
// What the time model knows of a device: peak rates, memory, the scale-up
// links inside a node and the network across nodes, and the efficiency
// terms that separate a datasheet from a measurement (the fraction of peak
// a large matrix multiplication reaches, the achieved memory and link
// bandwidths, latencies). A profile is a JSON file, one per device; each
// number names its source (docs/CostModel.md). The shipped profiles
// (`profiles/*.json`) are built into the tools; `--device-profile=FILE`
// reads a user's. No MLIR: the trace tools read it too.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_DEVICEPROFILE_H
#define STAGE_SUPPORT_DEVICEPROFILE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stage {

struct DeviceProfile {
  std::string name;
  std::string description;
  /// Peak rates, per second: dense bf16 on the matrix units, dense fp8 (0:
  /// none, fp8 runs at the bf16 rate), elementwise on the vector units.
  double matmulFlops = 0;
  double fp8Flops = 0;
  double vectorFlops = 0;
  /// HBM bandwidth (bytes/s) and size (bytes).
  double memoryBytes = 0;
  double memoryCapacity = 0;
  /// Streaming multiprocessors or compute units (0: not given).
  int64_t multiprocessors = 0;
  /// The output tile (rows x columns) a multiplication library computes
  /// per multiprocessor at a time, for large bf16 products (0: not given,
  /// no tile or wave quantization).
  int64_t matmulTileRows = 0;
  int64_t matmulTileColumns = 0;
  /// Efficiency terms, fractions of the peaks above, and the seconds each
  /// kernel adds.
  double matmulEfficiency = 1;
  double fp8MatmulEfficiency = 1;
  double memoryEfficiency = 1;
  double kernelOverhead = 0;
  /// The node: `gpusPerNode` devices share scale-up links of `linkBytes`
  /// per direction; groups that span nodes use the network at
  /// `networkBytes` per device and direction. Latencies per ring step.
  int64_t gpusPerNode = 8;
  double linkBytes = 0;
  double linkEfficiency = 1;
  double latency = 5e-7;
  double networkBytes = 50e9;
  double networkEfficiency = 1;
  double networkLatency = 5e-7;
  /// All-to-all as a ring (each part travels as many hops as its distance,
  /// n/2 times the direct exchange's bytes per link, as ASTRA-sim's default
  /// system runs it) rather than directly between every pair.
  bool ringAllToAll = false;

  /// Where each number came from, by its JSON key.
  std::map<std::string, std::string> sources;
  /// The numbers set by options after the profile was read (the name of
  /// every output says so).
  std::vector<std::string> overridden;

  /// Every number a time depends on, as bytes (a key for memoized times).
  std::string timingKey() const;
  /// "h100", or "h100 with peak-flops, link-bandwidth overridden".
  std::string displayName() const;
  /// Sets the number of JSON key `key` (as `network_bandwidth`) and notes
  /// it overridden; false with `error` for an unknown key or a value out of
  /// its range.
  bool set(llvm::StringRef key, double value, std::string &error);
  /// The number of JSON key `key`, if there is one.
  std::optional<double> get(llvm::StringRef key) const;
  /// The JSON keys of the profile's numbers.
  static std::vector<std::string> numberKeys();

  /// A profile from its JSON text; `fallbackName` names it when the text
  /// does not. Nullopt with `error` on an unknown key, a missing required
  /// number (matrix_flops, memory_bandwidth, memory_capacity,
  /// link_bandwidth) or a value out of range.
  static std::optional<DeviceProfile> parse(llvm::StringRef json,
                                            llvm::StringRef fallbackName,
                                            std::string &error);
};

/// A profile shipped with stage (`profiles/NAME.json`), by name, any case.
std::optional<DeviceProfile> getShippedProfile(llvm::StringRef name);
/// "a100-40gb, a100-80gb, b200, ...".
std::string getShippedProfileNames();
/// The shipped profiles' JSON texts, by name (a test reads their sources).
const std::map<std::string, std::string> &getShippedProfileTexts();

} // namespace stage

#endif // STAGE_SUPPORT_DEVICEPROFILE_H
