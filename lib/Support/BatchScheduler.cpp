//===- BatchScheduler.cpp - Continuous batching of a request stream -------===//

#include "Stage/Support/BatchScheduler.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <deque>

using namespace stage;

namespace {
/// A request on its replica. Invariant once it has a token: `cached =
/// prompt + generated - 1` after each iteration that completes its
/// (re)computed prompt; the last generated token is the next input.
struct Live {
  size_t index = 0;
  /// Positions its prompt pass must compute: the prompt, plus after a
  /// preemption the tokens generated before it.
  int64_t target = 0;
  int64_t prefilled = 0, cached = 0, generated = 0, blocks = 0;
};

int64_t blocksFor(int64_t positions, int64_t blockTokens) {
  return (positions + blockTokens - 1) / blockTokens;
}

class Replica {
public:
  Replica(int64_t id, const SchedulerConfig &c, const IterationCost &cost,
          ServingRun &run)
      : id(id), c(c), cost(cost), run(run) {}

  /// Serves `mine` (indices into `requests`, in arrival order); false if
  /// an iteration could neither run nor preempt (which the validation of
  /// the requests rules out).
  bool serve(const std::vector<Request> &requests,
             const std::vector<size_t> &mine) {
    size_t next = 0, done = 0;
    double t = 0;
    int64_t free = c.kvBlocks;
    std::deque<Live> waiting;
    std::vector<Live> running; // in admission order
    while (done < mine.size()) {
      while (next < mine.size() && requests[mine[next]].arrival <= t) {
        const Request &r = requests[mine[next]];
        waiting.push_back({mine[next], r.promptTokens});
        ++next;
      }
      if (running.empty() && waiting.empty()) {
        t = requests[mine[next]].arrival;
        continue;
      }
      IterationMix mix;
      std::vector<std::pair<size_t, int64_t>> work; // running slot, tokens
      int64_t budget = c.maxBatchedTokens;
      bool preempted = false;
      auto preemptLast = [&] {
        Live v = running.back();
        running.pop_back();
        free += v.blocks;
        RequestOutcome &o = run.requests[v.index];
        ++o.preemptions;
        ++run.preemptions;
        waiting.push_front({v.index, o.promptTokens + v.generated, 0, 0,
                            v.generated, 0});
        preempted = true;
      };
      // Running requests first, oldest first.
      for (size_t i = 0; i < running.size() && budget > 0;) {
        Live &r = running[i];
        int64_t tokens = r.prefilled < r.target
                             ? std::min(r.target - r.prefilled, budget)
                             : 1;
        int64_t need = blocksFor(r.cached + tokens, c.blockTokens) - r.blocks;
        while (need > free && running.size() - 1 > i)
          preemptLast();
        if (need > free) {
          preemptLast(); // itself: nothing younger is left to take from
          break;
        }
        free -= need;
        running[i].blocks += need;
        work.push_back({i, tokens});
        budget -= tokens;
        ++i;
      }
      // Then new requests, unless this iteration had to preempt.
      while (!preempted && budget > 0 && !waiting.empty() &&
             int64_t(running.size()) < c.maxRunning) {
        Live r = waiting.front();
        int64_t tokens = std::min(r.target - r.prefilled, budget);
        int64_t need = blocksFor(r.cached + tokens, c.blockTokens);
        if (need > free)
          break;
        waiting.pop_front();
        free -= need;
        r.blocks = need;
        running.push_back(r);
        work.push_back({running.size() - 1, tokens});
        budget -= tokens;
      }
      for (auto [slot, tokens] : work) {
        const Live &r = running[slot];
        if (r.prefilled < r.target) {
          mix.chunks.push_back({r.cached, tokens});
        } else {
          ++mix.decodes;
          mix.decodeContext += double(r.cached + 1);
        }
      }
      IterationRecord rec;
      rec.replica = id;
      rec.start = t;
      rec.decodes = mix.decodes;
      for (const IterationMix::Chunk &ch : mix.chunks)
        rec.promptTokens += ch.size;
      rec.running = int64_t(running.size());
      rec.waiting = int64_t(waiting.size());
      rec.kvBlocksUsed = c.kvBlocks - free;
      if (work.empty()) {
        if (!preempted)
          return false;
        continue;
      }
      rec.seconds = cost(mix);
      t += rec.seconds;
      run.iterations.push_back(rec);
      // Tokens come out at the iteration's end.
      for (auto [slot, tokens] : work) {
        Live &r = running[slot];
        RequestOutcome &o = run.requests[r.index];
        r.cached += tokens;
        if (r.prefilled < r.target) {
          r.prefilled += tokens;
          if (r.prefilled < r.target)
            continue;
        }
        if (r.generated++ == 0)
          o.firstToken = t;
        if (r.generated == o.outputTokens) {
          o.finish = t;
          free += r.blocks;
          r.blocks = -1; // finished: removed below
          ++done;
        }
      }
      running.erase(std::remove_if(running.begin(), running.end(),
                                   [](const Live &r) { return r.blocks < 0; }),
                    running.end());
    }
    return true;
  }

private:
  int64_t id;
  const SchedulerConfig &c;
  const IterationCost &cost;
  ServingRun &run;
};
} // namespace

std::optional<std::string>
stage::simulateServing(const std::vector<Request> &requests,
                       const SchedulerConfig &c, const IterationCost &cost,
                       ServingRun &run) {
  if (c.maxBatchedTokens < 1 || c.maxRunning < 1 || c.blockTokens < 1 ||
      c.replicas < 1)
    return std::string("the token budget, the running requests, the block "
                       "size and the replicas must each be at least 1");
  if (c.kvBlocks < 1)
    return std::string("the KV cache holds no block: the weights and the "
                       "working set leave no memory for it");
  run = ServingRun();
  for (auto [i, r] : llvm::enumerate(requests)) {
    // The cache holds the prompt and every output token but the last.
    int64_t positions = r.promptTokens + r.outputTokens - 1;
    if (blocksFor(positions, c.blockTokens) > c.kvBlocks)
      return "request " + std::to_string(i) + " needs " +
             std::to_string(positions) +
             " cached positions (prompt and output), more than a replica's "
             "KV cache holds (" +
             std::to_string(c.kvBlocks * c.blockTokens) + ")";
    if (i > 0 && r.arrival < requests[i - 1].arrival)
      return std::string("requests must be in arrival order");
    RequestOutcome o;
    o.arrival = r.arrival;
    o.promptTokens = r.promptTokens;
    o.outputTokens = r.outputTokens;
    o.replica = int64_t(i % size_t(c.replicas));
    run.requests.push_back(o);
  }
  for (int64_t id = 0; id < c.replicas; ++id) {
    std::vector<size_t> mine;
    for (size_t i = size_t(id); i < requests.size(); i += size_t(c.replicas))
      mine.push_back(i);
    if (!Replica(id, c, cost, run).serve(requests, mine))
      return "replica " + std::to_string(id) +
             " could neither schedule nor preempt a request";
  }
  return std::nullopt;
}
