//===- FuzzTraceSet.cpp - libFuzzer target: trace reader and verifier -----===//
//
// Any bytes as a two-rank Chakra trace set: the communicator groups file
// (workload.json) and two rank files, unpacked from the input as
//   u32 n | n bytes workload.json | u32 m | m bytes rank 0 | rest: rank 1
// (little endian; fuzz/pack_trace_set.py packs seeds). The set is read
// from memory and verified as `stage-trace verify --without-manifest` does
// (the in-memory set has no manifest): decoding, identities, dependencies,
// groups, send/recv pairs and the abstract run. The JSON part is also read
// as a manifest. Any finding is fine; a crash or a hang is a bug.
//
//===----------------------------------------------------------------------===//

#include "Stage/Support/TraceManifest.h"
#include "Stage/Target/ChakraVerify/Verifier.h"

#include <cstdint>
#include <map>
#include <string>

namespace {
/// Takes a length-prefixed part off the front of `in` (the rest when the
/// prefix is missing or longer than what is left).
std::string takePart(const uint8_t *&in, size_t &left) {
  if (left < 4) {
    std::string all(reinterpret_cast<const char *>(in), left);
    in += left, left = 0;
    return all;
  }
  uint32_t n = uint32_t(in[0]) | uint32_t(in[1]) << 8 | uint32_t(in[2]) << 16 |
               uint32_t(in[3]) << 24;
  in += 4, left -= 4;
  size_t take = std::min<size_t>(n, left);
  std::string part(reinterpret_cast<const char *>(in), take);
  in += take, left -= take;
  return part;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *in = data;
  size_t left = size;
  std::map<std::string, std::string> files;
  files["workload.json"] = takePart(in, left);
  files["workload.0.et"] = takePart(in, left);
  files["workload.1.et"].assign(reinterpret_cast<const char *>(in), left);
  stage::trace::TraceSetOptions o;
  o.dir = "fuzz";
  o.files = &files;
  o.threads = 1;
  o.withoutManifest = true;
  (void)stage::trace::verifyTraceSet(o);
  std::string error;
  (void)stage::trace::traceSetStats(o, error);
  (void)stage::TraceManifest::parse(files["workload.json"], error);
  return 0;
}
