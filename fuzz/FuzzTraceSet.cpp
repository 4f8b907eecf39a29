//===- FuzzTraceSet.cpp - libFuzzer target: trace reader and verifier -----===//
//
// Any bytes as a two-rank Chakra trace set: the communicator groups file
// (workload.json) and two rank files, unpacked from the input as
//   u32 n | n bytes workload.json | u32 m | m bytes rank 0 | rest: rank 1
// (little endian; fuzz/pack_trace_set.py packs seeds). The set is written
// to a scratch directory and verified as `stage-trace verify` does:
// decoding, dependencies, groups, send/recv pairs and the abstract run. Any
// finding is fine; a crash or a hang is a bug.
//
//===----------------------------------------------------------------------===//

#include "Stage/Target/ChakraVerify/Verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

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

void writeFile(const std::string &path, const std::string &bytes) {
  FILE *f = fopen(path.c_str(), "wb");
  if (!f)
    abort(); // the scratch directory is gone: nothing to fuzz
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string dir = [] {
    const char *base = getenv("TMPDIR");
    std::string d = std::string(base ? base : "/tmp") + "/stage-fuzz-trace-" +
                    std::to_string(getpid());
    std::string cmd = "mkdir -p '" + d + "'";
    if (system(cmd.c_str()) != 0)
      abort();
    return d;
  }();
  const uint8_t *in = data;
  size_t left = size;
  std::string groups = takePart(in, left);
  std::string rank0 = takePart(in, left);
  std::string rank1(reinterpret_cast<const char *>(in), left);
  writeFile(dir + "/workload.json", groups);
  writeFile(dir + "/workload.0.et", rank0);
  writeFile(dir + "/workload.1.et", rank1);
  stage::trace::TraceSetOptions o;
  o.dir = dir;
  o.threads = 1;
  (void)stage::trace::verifyTraceSet(o);
  std::string error;
  (void)stage::trace::traceSetStats(o, error);
  return 0;
}
