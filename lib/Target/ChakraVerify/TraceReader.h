//===- TraceReader.h - Decoding Chakra trace files --------------*- C++ -*-===//
//
// A decoder of the Chakra wire format written independently of stage's
// encoder: it reads any generator's files and keeps, per node, what the
// checks and statistics need, including which oneof member carried each
// attribute.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRAVERIFY_TRACEREADER_H
#define STAGE_LIB_TARGET_CHAKRAVERIFY_TRACEREADER_H

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace stage::trace {

/// An attribute as found on the wire. Text points into the file's bytes.
struct Attr {
  unsigned member = 0;   // field number of the oneof member (9: int64_val, ...)
  uint64_t raw = 0;      // varint value (members with varint wire type)
  std::string_view text; // string_val
  bool present = false;
};

struct Node {
  uint64_t id = 0;
  std::string_view name; // into the file's bytes
  uint64_t type = 0;
  uint32_t depsBegin = 0, depsCount = 0; // data_deps then ctrl_deps
  uint64_t durationMicros = 0;
  unsigned message = 0; // index of the message in the file (1-based)
  Attr isCpuOp, numOps, tensorSize, commType, commSize, commSrc, commDst,
      commTag, pgName;
};

/// A decoded file; its strings point into the bytes it was decoded from,
/// which must outlive it.
struct TraceFile {
  std::string path;
  bool hasMetadata = false;
  std::string version;
  /// The metadata's attributes that tie a file to its set (stage writes
  /// them; other generators need not): the set's identity, the rank, the
  /// set's rank count.
  Attr traceSet, rank, numRanks;
  std::vector<Node> nodes;
  std::vector<uint64_t> deps; // every node's dependencies, node after node
  const uint64_t *depsOf(const Node &n) const { return deps.data() + n.depsBegin; }
};

/// Decodes `bytes`; returns the problems of framing and message structure
/// (each prefixed with `path`). Nodes decoded before an error are kept.
std::vector<std::string> decodeTrace(const std::string &path,
                                     std::string_view bytes, TraceFile &out);

/// The int32 a varint carries (int32 fields are sign-extended on the wire).
inline int64_t asInt32(uint64_t raw) { return int64_t(int32_t(uint32_t(raw))); }

} // namespace stage::trace

#endif // STAGE_LIB_TARGET_CHAKRAVERIFY_TRACEREADER_H
