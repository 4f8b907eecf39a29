//===- PipelineScheduleTest.cpp - Schedules against their definitions -----===//

#include "Stage/Analysis/PipelineSchedule.h"

#include "gtest/gtest.h"

#include <set>

using namespace mlir::stage;

namespace {

std::vector<int64_t> stageCounts() { return {2, 3, 4, 8}; }
std::vector<int64_t> microBatchCounts(int64_t pp) {
  return {1, pp - 1 > 0 ? pp - 1 : 1, pp, 2 * pp + 1};
}

/// Every stage runs every forward and backward of its chunks exactly once,
/// each backward after its forward.
void expectComplete(const ScheduleShape &s) {
  for (int64_t p = 0; p < s.stages; ++p) {
    std::vector<PipelineStep> steps = getStageSchedule(s, p);
    EXPECT_EQ(steps.size(), size_t(2 * s.microBatches * s.virtualStages));
    std::set<std::tuple<bool, int64_t, int64_t>> seen;
    for (const PipelineStep &st : steps) {
      EXPECT_EQ(st.chunk % s.stages, p);
      EXPECT_TRUE(seen.insert({st.forward, st.chunk, st.microbatch}).second);
      if (!st.forward)
        EXPECT_TRUE(seen.count({true, st.chunk, st.microbatch}));
    }
  }
}

TEST(PipelineSchedule, GPipeRunsAllForwardsThenAllBackwards) {
  for (int64_t pp : stageCounts())
    for (int64_t M : microBatchCounts(pp)) {
      ScheduleShape s{ScheduleKind::gpipe, pp, 1, M};
      expectComplete(s);
      std::vector<PipelineStep> steps = getStageSchedule(s, pp - 1);
      for (int64_t i = 0; i < M; ++i) {
        EXPECT_TRUE(steps[i].forward);
        EXPECT_FALSE(steps[M + i].forward);
      }
    }
}

TEST(PipelineSchedule, OneFOneBWarmsUpWithStagesAfterIt) {
  for (int64_t pp : stageCounts())
    for (int64_t M : microBatchCounts(pp)) {
      ScheduleShape s{ScheduleKind::one_f_one_b, pp, 1, M};
      expectComplete(s);
      for (int64_t p = 0; p < pp; ++p) {
        std::vector<PipelineStep> steps = getStageSchedule(s, p);
        int64_t warmup = std::min(pp - p - 1, M);
        for (int64_t i = 0; i < warmup; ++i)
          EXPECT_TRUE(steps[i].forward);
        // Then one forward, one backward while forwards remain.
        for (int64_t i = 0; i < M - warmup; ++i) {
          EXPECT_TRUE(steps[warmup + 2 * i].forward);
          EXPECT_FALSE(steps[warmup + 2 * i + 1].forward);
        }
        // At most pp - p micro-batches are in flight on stage p.
        int64_t inFlight = 0, peak = 0;
        for (const PipelineStep &st : steps) {
          inFlight += st.forward ? 1 : -1;
          peak = std::max(peak, inFlight);
        }
        EXPECT_EQ(peak, std::min(pp - p, M));
      }
    }
}

TEST(PipelineSchedule, CriticalPathIsTheTextbookValue) {
  const double f = 1.0, b = 2.0;
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b})
    for (int64_t pp : stageCounts())
      for (int64_t M : microBatchCounts(pp)) {
        ScheduleShape s{kind, pp, 1, M};
        std::optional<double> t = simulateSchedule(s, f, b);
        ASSERT_TRUE(t.has_value());
        EXPECT_DOUBLE_EQ(*t, double(M + pp - 1) * (f + b))
            << "pp=" << pp << " M=" << M;
      }
}

TEST(PipelineSchedule, InterleavingShrinksTheBubbleByV) {
  const double f = 1.0, b = 2.0;
  for (int64_t pp : stageCounts())
    for (int64_t v : {2, 3, 4})
      for (int64_t M : {pp, 2 * pp, 3 * pp}) {
        ScheduleShape s{ScheduleKind::interleaved, pp, v, M};
        ASSERT_EQ(checkSchedule(s), "");
        expectComplete(s);
        std::optional<double> t = simulateSchedule(s, f, b);
        ASSERT_TRUE(t.has_value()) << "pp=" << pp << " v=" << v << " M=" << M;
        double ideal = double(M) * (f + b);
        EXPECT_NEAR(*t, ideal + double(pp - 1) * (f + b) / double(v), 1e-9)
            << "pp=" << pp << " v=" << v << " M=" << M;
        EXPECT_DOUBLE_EQ(getBubbleFraction(s), double(pp - 1) / double(v * M));
      }
}

TEST(PipelineSchedule, InterleavedNeedsMultipleOfStages) {
  ScheduleShape s{ScheduleKind::interleaved, 4, 2, 6};
  EXPECT_EQ(checkSchedule(s),
            "the interleaved schedule needs a micro-batch count that is a "
            "multiple of pp: M = 6 is not a multiple of pp = 4");
  EXPECT_EQ(checkSchedule({ScheduleKind::one_f_one_b, 4, 2, 8}),
            "only the interleaved schedule has virtual stages");
}

} // namespace
