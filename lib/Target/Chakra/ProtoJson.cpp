//===- ProtoJson.cpp - Trace files as JSON through protobuf ---------------===//

#include "ProtoJson.h"

#include "chakra.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/util/json_util.h>

std::string stage_chakra_proto::traceToJson(const std::string &bytes,
                                            std::string &error) {
  google::protobuf::io::CodedInputStream in(
      reinterpret_cast<const uint8_t *>(bytes.data()), int(bytes.size()));
  in.SetTotalBytesLimit(INT32_MAX);
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = false;
  options.preserve_proto_field_names = true;
  std::string out;
  bool first = true;
  while (in.BytesUntilLimit() != 0 && !in.ExpectAtEnd()) {
    uint32_t size;
    if (!in.ReadVarint32(&size)) {
      error = "truncated length";
      return "";
    }
    auto limit = in.PushLimit(int(size));
    std::string json;
    if (first) {
      ChakraProtoMsg::GlobalMetadata meta;
      if (!meta.ParseFromCodedStream(&in)) {
        error = "malformed GlobalMetadata";
        return "";
      }
      (void)google::protobuf::util::MessageToJsonString(meta, &json, options);
    } else {
      ChakraProtoMsg::Node node;
      if (!node.ParseFromCodedStream(&in)) {
        error = "malformed Node";
        return "";
      }
      (void)google::protobuf::util::MessageToJsonString(node, &json, options);
    }
    in.PopLimit(limit);
    out += json + "\n";
    first = false;
  }
  return out;
}
