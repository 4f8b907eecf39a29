//===- BatchScheduler.h - Continuous batching of a request stream -*- C++ -*-===//
//
// The iteration-level scheduler of vLLM (v1) and Sarathi-Serve, run over a
// stream of requests: each iteration takes up to a token budget, first one
// token of every running request that is decoding (or the next chunk of
// its prompt), then new requests in arrival order while the budget, the
// running-request limit and the KV cache allow; a request that needs a new
// cache block when none is free preempts the most recently admitted
// request, which gives its blocks back and later recomputes its prompt and
// the tokens it had generated. The time of an iteration is the caller's
// (stage evaluates the compiled serving step at the iteration's mix).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_BATCHSCHEDULER_H
#define STAGE_SUPPORT_BATCHSCHEDULER_H

#include "Stage/Support/RequestWorkload.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace stage {

struct SchedulerConfig {
  /// Tokens one iteration processes (decode tokens and prompt chunks).
  int64_t maxBatchedTokens = 2048;
  /// Requests admitted at once (vLLM's max_num_seqs).
  int64_t maxRunning = 256;
  /// Positions per KV-cache block, and the blocks one replica holds.
  int64_t blockTokens = 16;
  int64_t kvBlocks = 0;
  /// Independent replicas; requests go to them in turn, in arrival order.
  int64_t replicas = 1;
};

/// What one iteration processes: `decodes` requests one token each,
/// attending `decodeContext` positions in all (each its cache and the new
/// position), and prompt chunks of `size` tokens after `prefix` cached
/// positions of their request.
struct IterationMix {
  struct Chunk {
    int64_t prefix = 0, size = 0;
  };
  int64_t decodes = 0;
  double decodeContext = 0;
  std::vector<Chunk> chunks;
};

/// Seconds of an iteration.
using IterationCost = std::function<double(const IterationMix &)>;

struct RequestOutcome {
  double arrival = 0, firstToken = 0, finish = 0;
  int64_t promptTokens = 0, outputTokens = 0;
  int64_t preemptions = 0;
  int64_t replica = 0;
};

struct IterationRecord {
  int64_t replica = 0;
  double start = 0, seconds = 0;
  int64_t decodes = 0, promptTokens = 0;
  /// At the iteration's start, after scheduling: requests running (admitted
  /// and not finished) and waiting (arrived, not admitted); cache blocks
  /// in use.
  int64_t running = 0, waiting = 0, kvBlocksUsed = 0;
};

struct ServingRun {
  std::vector<RequestOutcome> requests; // in the workload's order
  std::vector<IterationRecord> iterations; // by replica, then in time
  int64_t preemptions = 0;
};

/// Runs `requests` (in arrival order) through the scheduler. Errors when a
/// request could never fit the cache (its prompt and output need more
/// blocks than a replica has) or the configuration is invalid.
std::optional<std::string> simulateServing(const std::vector<Request> &requests,
                                           const SchedulerConfig &config,
                                           const IterationCost &cost,
                                           ServingRun &run);

} // namespace stage

#endif // STAGE_SUPPORT_BATCHSCHEDULER_H
