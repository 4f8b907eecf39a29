//===- KVHandoff.h - KV caches moved from prefill to decode ranks -*- C++
//-*-===//
//
// Disaggregated serving: after a group of requests' prefill, each prefill
// rank holds a box of its caches (layers of its stage x the group's
// requests x its positions x its heads), and each decode rank needs a box
// (its layers x its group's requests x the prompt positions x its heads).
// Every non-empty overlap is one message; an entry held by several
// prefill ranks (heads replicated over tp, a latent cache every tp rank
// holds) is sent by one of them, chosen by the decode rank so that the
// copies share the load. Messages are tagged by the pair of groups.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRA_KVHANDOFF_H
#define STAGE_LIB_TARGET_CHAKRA_KVHANDOFF_H

#include "RankLayout.h"

#include "mlir/IR/Location.h"

#include <map>

namespace mlir::stage::chakra {

struct HandoffMessage {
  int64_t peer;
  uint64_t bytes;
  int64_t tag;
};

class KVHandoff {
public:
  /// The messages between the ranks of `prefill` and those of `decode`.
  /// Fails, at `loc`, when the decode group needs an entry no prefill rank
  /// holds (the groups cache differently).
  static FailureOr<KVHandoff> plan(const Workload &prefill,
                                   const RankLayout &prefillRanks,
                                   const Workload &decode,
                                   const RankLayout &decodeRanks, Location loc);

  /// What `rank` sends (a prefill rank) or receives (a decode rank) for its
  /// serving group `group`, in a fixed order.
  ArrayRef<HandoffMessage> getMessages(int64_t rank, int64_t group) const;
  /// The bytes all messages move.
  uint64_t getTotalBytes() const { return totalBytes; }
  size_t getNumMessages() const { return numMessages; }

private:
  std::map<std::pair<int64_t, int64_t>, std::vector<HandoffMessage>> messages;
  uint64_t totalBytes = 0;
  size_t numMessages = 0;
};

} // namespace mlir::stage::chakra

#endif // STAGE_LIB_TARGET_CHAKRA_KVHANDOFF_H
