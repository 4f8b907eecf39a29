//===- Show.h - One rank's trace, for a person ------------------*- C++ -*-===//
//
// What `stage-trace show` prints: a rank's nodes as its file holds them
// (kind, FLOPs, bytes, group or peer, dependencies), decoded from the file
// with the verifier's reader, not regenerated from the IR, so that it shows
// any generator's traces.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_TARGET_CHAKRAVERIFY_SHOW_H
#define STAGE_TARGET_CHAKRAVERIFY_SHOW_H

#include "Stage/Target/ChakraVerify/Verifier.h"

#include <optional>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace stage::trace {

struct ShowOptions {
  int64_t rank = 0;
  bool json = false;            // else text, a line per node
  std::optional<uint64_t> node; // only this node, and what waits for it
};

/// Prints rank `s.rank` of the set `o` to `os`; an error message (naming the
/// file) when the file is missing or malformed, or the node does not exist.
std::string showRank(const TraceSetOptions &o, const ShowOptions &s,
                     llvm::raw_ostream &os);

} // namespace stage::trace

#endif // STAGE_TARGET_CHAKRAVERIFY_SHOW_H
