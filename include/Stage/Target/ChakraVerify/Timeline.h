//===- Timeline.h - A trace set replayed in time ----------------*- C++ -*-===//
//
// What `stage-trace timeline` writes: an as-soon-as-possible replay of every
// rank's graph under ASTRA-sim's issue rules, with roofline compute times
// (or each node's duration_micros) and the report's communication model
// (ring algorithms over one link), as Chrome/Perfetto trace-event JSON for
// the ranks asked for: one process per rank, a compute thread and as many
// communication threads as it has operations in flight at once.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_TARGET_CHAKRAVERIFY_TIMELINE_H
#define STAGE_TARGET_CHAKRAVERIFY_TIMELINE_H

#include "Stage/Support/DeviceProfile.h"
#include "Stage/Target/ChakraVerify/Verifier.h"

#include <map>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace stage::trace {

struct TimelineOptions {
  std::vector<int64_t> ranks; // whose events to write
  /// The device and its node (Stage/Support/TimeModel.h prices every node
  /// that has no duration, and every communication).
  DeviceProfile device;
};

/// A node of a rank asked for, in time.
struct ReplayedNode {
  uint64_t id = 0;
  std::string name;
  double start = 0, end = 0; // seconds
  uint32_t lane = 0;         // 0: compute; 1, 2, ...: communication
  uint64_t flops = 0, bytes = 0;
};
struct ReplayedTimeline {
  int64_t ranks = 0;
  double iteration = 0; // seconds, the last node's end on any rank
  /// Every compute node carried its duration (else some were priced from
  /// their FLOPs and bytes alone).
  bool durations = true;
  std::map<int64_t, std::vector<ReplayedNode>> byRank;
};

/// Replays the set; the ranks asked for, node by node. An error message as
/// writeTimeline's.
std::string replayTimeline(const TraceSetOptions &o, const TimelineOptions &t,
                           ReplayedTimeline &out);

/// Replays the set and writes the ranks' events to `os`. An error message
/// when the set does not load cleanly, a rank is out of range, or the
/// replay does not finish (`stage-trace verify` says why).
std::string writeTimeline(const TraceSetOptions &o, const TimelineOptions &t,
                          llvm::raw_ostream &os);

} // namespace stage::trace

#endif // STAGE_TARGET_CHAKRAVERIFY_TIMELINE_H
