//===- Verifier.h - Checking a Chakra trace set -----------------*- C++ -*-===//
//
// Checks any generator's trace set against what ASTRA-sim needs to run it
// to completion with the meant result: framing, node ids and dependencies,
// required attributes with the oneof member every reader accepts,
// communicator groups, send/recv pairs, the order of every group's
// collectives, and an abstract run of the issue rules (one communication op
// in flight per rank, collectives matched by issue order) that finds the
// waits that never end.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_TARGET_CHAKRAVERIFY_VERIFIER_H
#define STAGE_TARGET_CHAKRAVERIFY_VERIFIER_H

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace stage::trace {

struct TraceSetOptions {
  std::string dir;
  /// The set's manifest is <prefix>.manifest.json, which names its files;
  /// without one, the files are <prefix>.<rank>.et and <prefix>.json.
  std::string prefix = "workload";
  std::string groups; // without manifest; default <dir>/<prefix>.json
  /// A set of another generator: no manifest, its files found by name.
  bool withoutManifest = false;
  /// No file larger than this is read (the emitter's per-rank limit).
  uint64_t maxFileBytes = uint64_t(4) << 30;
  unsigned threads = 0; // 0: all cores
  /// When set, the set's files by name (`workload.0.et`, ...), read from
  /// memory instead of `dir`: the fuzz target's way, without file I/O.
  const std::map<std::string, std::string> *files = nullptr;
  /// When set, the seconds of each compute node (from its num_ops,
  /// tensor_size and duration_micros) are kept for a timed replay.
  std::function<double(uint64_t flops, uint64_t bytes, uint64_t micros)>
      computeSeconds;
};

struct VerifyResult {
  int64_t ranks = 0;
  uint64_t nodes = 0;
  std::vector<std::string> errors;
  bool truncated = false; // more errors than reported
};

VerifyResult verifyTraceSet(const TraceSetOptions &options);

/// Per-rank statistics as JSON: node counts by type, FLOPs, bytes, and
/// communication bytes by collective type. `error` is set on failure.
std::string traceSetStats(const TraceSetOptions &options, std::string &error);

} // namespace stage::trace

#endif // STAGE_TARGET_CHAKRAVERIFY_VERIFIER_H
