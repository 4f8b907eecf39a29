//===- ProtoJson.h - Trace files as JSON through protobuf -------*- C++ -*-===//
//
// Decodes a trace file with the protobuf classes generated from
// chakra.proto (a decoder that shares nothing with the encoder) and prints
// one JSON object per message. Compiled apart: protobuf needs RTTI and
// exceptions, the MLIR code builds without.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRA_PROTOJSON_H
#define STAGE_LIB_TARGET_CHAKRA_PROTOJSON_H

#include <string>

namespace stage_chakra_proto {

/// JSON lines for `bytes` (a whole .et file), or an error message in
/// `error` and an empty result.
std::string traceToJson(const std::string &bytes, std::string &error);

} // namespace stage_chakra_proto

#endif // STAGE_LIB_TARGET_CHAKRA_PROTOJSON_H
