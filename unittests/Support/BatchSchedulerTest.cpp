//===- BatchSchedulerTest.cpp - Continuous batching, timed by hand --------===//
//
// Each timeline below was worked out by hand from the scheduler's rules
// (running requests first, then arrivals in order; a chunk is what the
// token budget leaves; the youngest running request is preempted when a
// block is missing), with every iteration taking one second unless a test
// says otherwise.

#include "Stage/Support/BatchScheduler.h"

#include "gtest/gtest.h"

using namespace stage;

namespace {

/// One second per iteration; keeps every mix.
struct Recorder {
  std::vector<IterationMix> mixes;
  IterationCost cost() {
    return [this](const IterationMix &m) {
      mixes.push_back(m);
      return 1.0;
    };
  }
};

SchedulerConfig config(int64_t budget, int64_t blocks, int64_t blockTokens = 16,
                       int64_t maxRunning = 256) {
  SchedulerConfig c;
  c.maxBatchedTokens = budget;
  c.kvBlocks = blocks;
  c.blockTokens = blockTokens;
  c.maxRunning = maxRunning;
  return c;
}

TEST(BatchScheduler, APromptIsChunkedByTheBudgetThenDecoded) {
  // Prompt 10 in chunks of 4, 4, 2; the third chunk's iteration ends at 3
  // with the first token; two decode steps attend 11 and 12 positions.
  Recorder rec;
  ServingRun run;
  ASSERT_FALSE(simulateServing({{0, 10, 3}}, config(4, 100), rec.cost(), run));
  ASSERT_EQ(rec.mixes.size(), 5u);
  int64_t prefixes[] = {0, 4, 8}, sizes[] = {4, 4, 2};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(rec.mixes[i].chunks.size(), 1u);
    EXPECT_EQ(rec.mixes[i].chunks[0].prefix, prefixes[i]);
    EXPECT_EQ(rec.mixes[i].chunks[0].size, sizes[i]);
    EXPECT_EQ(rec.mixes[i].decodes, 0);
  }
  EXPECT_EQ(rec.mixes[3].decodes, 1);
  EXPECT_EQ(rec.mixes[3].decodeContext, 11);
  EXPECT_EQ(rec.mixes[4].decodeContext, 12);
  const RequestOutcome &r = run.requests[0];
  EXPECT_EQ(r.firstToken, 3);
  EXPECT_EQ(r.finish, 5);
}

TEST(BatchScheduler, RunningRequestsDecodeBeforeAnArrivalIsPrefilled) {
  // A (prompt 2, 3 tokens) at 0; B (prompt 3, 2 tokens) at 0.5 waits for
  // the next iteration, which runs A's decode and B's whole prompt; both
  // finish at 3.
  Recorder rec;
  ServingRun run;
  ASSERT_FALSE(simulateServing({{0, 2, 3}, {0.5, 3, 2}}, config(4, 100),
                               rec.cost(), run));
  ASSERT_EQ(rec.mixes.size(), 3u);
  EXPECT_EQ(rec.mixes[0].decodes, 0);
  EXPECT_EQ(rec.mixes[1].decodes, 1);
  EXPECT_EQ(rec.mixes[1].decodeContext, 3);
  ASSERT_EQ(rec.mixes[1].chunks.size(), 1u);
  EXPECT_EQ(rec.mixes[1].chunks[0].size, 3);
  EXPECT_EQ(rec.mixes[2].decodes, 2);
  EXPECT_EQ(rec.mixes[2].decodeContext, 4 + 4);
  EXPECT_EQ(run.requests[0].firstToken, 1);
  EXPECT_EQ(run.requests[0].finish, 3);
  EXPECT_EQ(run.requests[1].firstToken, 2);
  EXPECT_EQ(run.requests[1].finish, 3);
}

TEST(BatchScheduler, AFullCachePreemptsTheYoungestWhichRecomputes) {
  // Blocks of 2 positions, 4 blocks. A (prompt 4, 4 tokens) and B (prompt
  // 3, 3 tokens) take 2 blocks each. At 1, A's fifth position needs a third
  // block: B is preempted with its one token. A alone until it finishes at
  // 4; B then recomputes 3 + 1 positions (5) and decodes once (6).
  Recorder rec;
  ServingRun run;
  ASSERT_FALSE(simulateServing({{0, 4, 4}, {0, 3, 3}}, config(8, 4, 2),
                               rec.cost(), run));
  ASSERT_EQ(rec.mixes.size(), 6u);
  EXPECT_EQ(rec.mixes[0].chunks.size(), 2u);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(rec.mixes[i].decodes, 1);
    EXPECT_TRUE(rec.mixes[i].chunks.empty());
    EXPECT_EQ(rec.mixes[i].decodeContext, 4 + i);
  }
  ASSERT_EQ(rec.mixes[4].chunks.size(), 1u);
  EXPECT_EQ(rec.mixes[4].chunks[0].prefix, 0);
  EXPECT_EQ(rec.mixes[4].chunks[0].size, 4);
  EXPECT_EQ(rec.mixes[5].decodeContext, 5);
  EXPECT_EQ(run.preemptions, 1);
  EXPECT_EQ(run.requests[0].finish, 4);
  EXPECT_EQ(run.requests[1].preemptions, 1);
  EXPECT_EQ(run.requests[1].firstToken, 1);
  EXPECT_EQ(run.requests[1].finish, 6);
}

TEST(BatchScheduler, TheRunningLimitQueuesArrivals) {
  // One request at a time: B starts when A has finished (at 2).
  Recorder rec;
  ServingRun run;
  ASSERT_FALSE(simulateServing({{0, 4, 2}, {0, 4, 2}}, config(64, 100, 16, 1),
                               rec.cost(), run));
  EXPECT_EQ(run.requests[0].finish, 2);
  EXPECT_EQ(run.requests[1].firstToken, 3);
  EXPECT_EQ(run.requests[1].finish, 4);
  for (const IterationMix &m : rec.mixes)
    EXPECT_EQ(m.decodes + int64_t(m.chunks.size()), 1);
}

TEST(BatchScheduler, AnIdleServerWaitsForTheNextArrival) {
  // Iterations take 0.25 s: the second request, at 10, finds the server
  // idle and its first token comes 0.25 s later.
  ServingRun run;
  ASSERT_FALSE(simulateServing({{0, 8, 1}, {10, 8, 1}}, config(64, 100),
                               [](const IterationMix &) { return 0.25; },
                               run));
  EXPECT_EQ(run.requests[0].finish, 0.25);
  EXPECT_EQ(run.requests[1].firstToken, 10.25);
  ASSERT_EQ(run.iterations.size(), 2u);
  EXPECT_EQ(run.iterations[1].start, 10);
}

TEST(BatchScheduler, ReplicasTakeRequestsInTurn) {
  ServingRun run;
  SchedulerConfig c = config(64, 100);
  c.replicas = 2;
  ASSERT_FALSE(simulateServing({{0, 8, 2}, {0, 8, 2}, {0, 8, 2}}, c,
                               [](const IterationMix &) { return 1.0; }, run));
  EXPECT_EQ(run.requests[0].replica, 0);
  EXPECT_EQ(run.requests[1].replica, 1);
  EXPECT_EQ(run.requests[2].replica, 0);
  // Replica 1 serves one request alone: prefill, one decode.
  EXPECT_EQ(run.requests[1].finish, 2);
}

TEST(BatchScheduler, ARequestTheCacheCannotHoldIsAnError) {
  ServingRun run;
  std::optional<std::string> e = simulateServing(
      {{0, 30, 4}}, config(64, 2), [](const IterationMix &) { return 1.0; },
      run);
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("33 cached positions"), std::string::npos) << *e;
  e = simulateServing({{0, 3, 4}}, config(64, 0),
                      [](const IterationMix &) { return 1.0; }, run);
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("no block"), std::string::npos) << *e;
}

} // namespace
