//===- PipelineScheduleTest.cpp - Schedules against their definitions -----===//

#include "Stage/Analysis/PipelineSchedule.h"
#include "Stage/Analysis/CostAnalysis.h"

// The list scheduler is private to the library; its promises are tested
// here with the schedules'.
#include "../../lib/Analysis/ListSchedule.h"

#include "gtest/gtest.h"

#include <array>
#include <limits>
#include <map>
#include <random>
#include <set>

using namespace mlir::stage;

namespace {

std::vector<int64_t> stageCounts() { return {2, 3, 4, 8}; }
std::vector<ScheduleKind> allScheduleKinds() {
  std::vector<ScheduleKind> kinds;
  for (uint32_t k = 0; k <= getMaxEnumValForScheduleKind(); ++k)
    kinds.push_back(*symbolizeScheduleKind(k));
  return kinds;
}
std::vector<int64_t> microBatchCounts(int64_t pp) {
  return {1, pp - 1 > 0 ? pp - 1 : 1, pp, 2 * pp + 1};
}

/// Every stage runs every forward and backward of its chunks exactly once
/// (a backward whole, or, under a schedule that splits, as an input and a
/// weight gradient), each backward after its forward and each weight
/// gradient after its input gradient.
void expectComplete(const ScheduleShape &s) {
  bool split = splitsBackward(s.kind);
  std::shared_ptr<const StageOrders> orders = getStageSchedules(s);
  const StageOrders &all = *orders;
  ASSERT_EQ(int64_t(all.size()), s.stages);
  for (int64_t p = 0; p < s.stages; ++p) {
    const std::vector<PipelineStep> &steps = all[p];
    EXPECT_EQ(steps, getStageSchedule(s, p));
    std::set<std::tuple<StepKind, int64_t, int64_t>> seen;
    for (const PipelineStep &st : steps) {
      EXPECT_EQ(getPhysicalStage(s.kind, s.stages, st.chunk), p);
      // (Braces: the macros expand to an if and an else.)
      if (!split) {
        EXPECT_TRUE(st.isForward() || st.kind == StepKind::Backward);
      }
      EXPECT_TRUE(seen.insert({st.kind, st.chunk, st.microbatch}).second);
      if (!st.isForward()) {
        EXPECT_TRUE(seen.count({StepKind::Forward, st.chunk, st.microbatch}));
      }
      if (st.kind == StepKind::WeightGrad) {
        EXPECT_TRUE(seen.count({StepKind::InputGrad, st.chunk, st.microbatch}));
      }
    }
    // Each chunk of the stage and micro-batch: a forward, and one whole
    // backward or both halves.
    for (int64_t c = 0; c < s.stages * s.virtualStages; ++c) {
      if (getPhysicalStage(s.kind, s.stages, c) != p)
        continue;
      ChunkChain chain = getChunkChain(s, c);
      for (int64_t m = chain.firstBatch; m < chain.endBatch; ++m) {
        EXPECT_TRUE(seen.count({StepKind::Forward, c, m}));
        bool whole = seen.count({StepKind::Backward, c, m});
        bool input = seen.count({StepKind::InputGrad, c, m});
        bool weight = seen.count({StepKind::WeightGrad, c, m});
        EXPECT_TRUE(whole != (input && weight) && input == weight)
            << "chunk " << c << " micro-batch " << m;
      }
    }
  }
}

/// The most micro-batches (in whole stages) any stage holds.
double peakInFlight(const ScheduleShape &s) {
  double peak = 0;
  for (int64_t p = 0; p < s.stages; ++p)
    peak = std::max(peak, getPeakInFlight(s, p));
  return peak;
}

TEST(PipelineSchedule, GPipeRunsAllForwardsThenAllBackwards) {
  for (int64_t pp : stageCounts())
    for (int64_t M : microBatchCounts(pp)) {
      ScheduleShape s{ScheduleKind::gpipe, pp, 1, M};
      expectComplete(s);
      std::vector<PipelineStep> steps = getStageSchedule(s, pp - 1);
      for (int64_t i = 0; i < M; ++i) {
        EXPECT_TRUE(steps[i].isForward());
        EXPECT_FALSE(steps[M + i].isForward());
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
          EXPECT_TRUE(steps[i].isForward());
        // Then one forward, one backward while forwards remain.
        for (int64_t i = 0; i < M - warmup; ++i) {
          EXPECT_TRUE(steps[warmup + 2 * i].isForward());
          EXPECT_FALSE(steps[warmup + 2 * i + 1].isForward());
        }
        // At most pp - p micro-batches are in flight on stage p.
        int64_t inFlight = 0, peak = 0;
        for (const PipelineStep &st : steps) {
          inFlight += st.isForward() ? 1 : -1;
          peak = std::max(peak, inFlight);
        }
        EXPECT_EQ(peak, std::min(pp - p, M));
        EXPECT_EQ(getPeakInFlight(s, p), double(std::min(pp - p, M)));
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

/// Step times (forward, input gradient, weight gradient) of a whole stage,
/// with W at most F as in transformer layers.
std::vector<std::array<double, 3>> stepTimes() {
  return {{1, 1, 1}, {2, 2, 1}, {1, 2, 1}, {2, 3, 2}};
}

// Qi et al. 2024, table 2: ZB-H1's bubble is (pp - 1)(F + B - W) with B
// the input gradient alone, against 1F1B's (pp - 1)(F + B + W); in the
// DeepSeek-V3 report's notation, where B is the whole backward, ZB1P's
// (pp - 1)(F + B - 2W).
TEST(PipelineSchedule, ZeroBubbleH1CriticalPathIsThePublishedValue) {
  for (auto [f, b, w] : stepTimes())
    for (int64_t pp : stageCounts())
      for (int64_t M : {pp, pp + 1, 2 * pp + 1, 4 * pp}) {
        ScheduleShape s{ScheduleKind::zb_h1, pp, 1, M};
        ASSERT_EQ(checkSchedule(s), "");
        expectComplete(s);
        std::optional<double> t = simulateSchedule(s, f, b, w);
        ASSERT_TRUE(t.has_value()) << "pp=" << pp << " M=" << M;
        double work = double(M) * (f + b + w);
        EXPECT_DOUBLE_EQ(*t, work + double(pp - 1) * (f + b - w))
            << "pp=" << pp << " M=" << M << " F=" << f << " B=" << b
            << " W=" << w;
        ScheduleShape oneFOneB{ScheduleKind::one_f_one_b, pp, 1, M};
        EXPECT_DOUBLE_EQ(*simulateSchedule(oneFOneB, f, b + w),
                         work + double(pp - 1) * (f + b + w));
      }
}

// ZB-H1 keeps 1F1B's peak: no stage holds more than pp micro-batches.
TEST(PipelineSchedule, ZeroBubbleH1HoldsWhatOneFOneBHolds) {
  for (int64_t pp : stageCounts())
    for (int64_t M : microBatchCounts(pp)) {
      ScheduleShape zb{ScheduleKind::zb_h1, pp, 1, M};
      ScheduleShape oneFOneB{ScheduleKind::one_f_one_b, pp, 1, M};
      expectComplete(zb);
      EXPECT_EQ(peakInFlight(zb), peakInFlight(oneFOneB)) << pp << " " << M;
      EXPECT_EQ(peakInFlight(zb), double(std::min(pp, M)));
      std::optional<double> t = simulateSchedule(zb, 1, 1, 1);
      ASSERT_TRUE(t.has_value());
      EXPECT_LT(*t, *simulateSchedule(oneFOneB, 1, 2));
    }
}

// ZB-V (Qi et al. 2024, section 6): two chunks per rank in a V, 1F1B's
// peak memory, and with equal steps no idle time but the last rank's wait
// for the first micro-batch's forward through the first half: pp - 1 chunk
// forwards, the least any schedule on the V can wait.
TEST(PipelineSchedule, ZeroBubbleVOnlyWaitsForTheFirstForward) {
  for (int64_t pp : stageCounts())
    for (int64_t M : {int64_t(1), pp, 2 * pp, 2 * pp + 1, 4 * pp}) {
      ScheduleShape s{ScheduleKind::zb_v, pp, 2, M};
      ASSERT_EQ(checkSchedule(s), "");
      expectComplete(s);
      EXPECT_LE(peakInFlight(s), double(pp)) << "pp=" << pp << " M=" << M;
      if (M < 2 * pp)
        continue;
      // Each chunk's steps take 1: a whole stage's F = B = W = 2.
      std::optional<double> t = simulateSchedule(s, 2, 2, 2);
      ASSERT_TRUE(t.has_value()) << "pp=" << pp << " M=" << M;
      EXPECT_DOUBLE_EQ(*t, double(M) * 6 + double(pp - 1))
          << "pp=" << pp << " M=" << M;
      EXPECT_EQ(peakInFlight(s), double(pp));
    }
}

// With unequal steps, planned with their costs, ZB-V is a heuristic: it
// ends within one chunk's steps of ZB-H1 (mostly before), and both before
// 1F1B.
TEST(PipelineSchedule, ZeroBubbleVIdlesLessThanOneFOneB) {
  for (auto [f, b, w] : stepTimes())
    for (int64_t pp : {2, 4, 8})
      for (int64_t M : {2 * pp, 3 * pp}) {
        ScheduleShape v{ScheduleKind::zb_v, pp, 2, M};
        v.weights.assign(2 * pp, StepWeights{f / 2, b / 2, w / 2});
        std::optional<double> tv = simulateSchedule(v, f, b, w);
        std::optional<double> th1 =
            simulateSchedule({ScheduleKind::zb_h1, pp, 1, M}, f, b, w);
        std::optional<double> t1 =
            simulateSchedule({ScheduleKind::one_f_one_b, pp, 1, M}, f, b + w);
        ASSERT_TRUE(tv && th1 && t1);
        EXPECT_LE(*tv, *th1 + (f + b + w) / 2)
            << "pp=" << pp << " M=" << M << " F=" << f << " B=" << b;
        EXPECT_LT(*tv, *t1);
        EXPECT_LT(*th1, *t1);
        EXPECT_LE(peakInFlight(v), double(pp));
        EXPECT_LT(getBubbleFraction(v), double(pp - 1) / double(M));
      }
}

// The list scheduler's own timeline is the replay's when every step takes
// its weight (`timed`): ZB-V's chosen order (the rule whose replay ends
// first) ends no later than any timed rule, as the least of them when all
// are. A timed rule given a bound at or past its end is planned, one far
// below it abandoned. Weights as a model has them (the first and last
// chunks, with the embedding and the head, apart), and weights that vary
// from chunk to chunk, with which ranks can all wait and a forward exceed
// the limit (not timed).
TEST(PipelineSchedule, ListScheduleTimesAndAbandonsItsOrders) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> weight(0.5, 3.0);
  auto draw = [&] {
    return StepWeights{weight(random), weight(random), weight(random)};
  };
  const Preference rules[] = {{false, true}, {true, true}, {true, false}};
  int64_t timedRules = 0, untimedRules = 0;
  for (bool everyChunk : {false, true})
    for (int64_t pp : {2, 4, 8})
      for (int64_t M : {2 * pp, 3 * pp + 1}) {
        ScheduleShape s{ScheduleKind::zb_v, pp, 2, M};
        s.weights.assign(size_t(2 * pp), draw());
        s.weights.front() = draw();
        s.weights.back() = draw();
        if (everyChunk)
          for (StepWeights &w : s.weights)
            w = draw();
        std::optional<ScheduleSpan> chosen = simulateSpan(s, s.weights);
        ASSERT_TRUE(chosen);
        bool allTimed = true;
        double least = std::numeric_limits<double>::infinity();
        for (Preference rule : rules) {
          StartedSteps started;
          ListOutcome whole = listSchedule(s, rule, started);
          ASSERT_EQ(whole.status, ListOutcome::Planned);
          ++(whole.timed ? timedRules : untimedRules);
          allTimed = allTimed && whole.timed;
          if (!whole.timed)
            continue;
          EXPECT_LE(chosen->end, whole.end) << "pp=" << pp << " M=" << M;
          least = std::min(least, whole.end);
          // Never abandoned at or past its end; at a quarter of it, the
          // busiest rank's work alone is more.
          for (double at : {1.0, 1.5})
            EXPECT_EQ(listSchedule(s, rule, started, at * whole.end).status,
                      ListOutcome::Planned)
                << "at " << at;
          EXPECT_EQ(listSchedule(s, rule, started, whole.end / 4).status,
                    ListOutcome::Abandoned);
        }
        if (allTimed) {
          EXPECT_EQ(chosen->end, least) << "pp=" << pp << " M=" << M;
        }
      }
  // Both kinds were met.
  EXPECT_GT(timedRules, 0);
  EXPECT_GT(untimedRules, 0);
  // A step of no weight is lengthened so that time advances: the planned
  // end is not the timeline's.
  ScheduleShape s{ScheduleKind::zb_v, 4, 2, 8};
  s.weights.assign(8, StepWeights{1, 1, 0});
  StartedSteps started;
  ListOutcome planned = listSchedule(s, rules[0], started);
  EXPECT_EQ(planned.status, ListOutcome::Planned);
  EXPECT_FALSE(planned.timed);
}

// A later rule resumed from where the first rule's schedule parts from
// its own plans the orders it plans alone (the ranks' steps at one time may
// be started in another order), and ends the same; a rule that never parts
// plans the first rule's orders.
TEST(PipelineSchedule, ListScheduleResumesWhereRulesPart) {
  std::mt19937 random(13);
  std::uniform_real_distribution<double> weight(0.5, 3.0);
  const Preference rules[] = {{false, true}, {true, true}, {true, false}};
  int64_t resumed = 0;
  for (bool everyChunk : {false, true})
    for (int64_t pp : {1, 2, 4, 8})
      for (int64_t M : {pp, 2 * pp, 3 * pp + 1}) {
        ScheduleShape s{ScheduleKind::zb_v, pp, 2, M};
        StepWeights middle{weight(random), weight(random), weight(random)};
        for (int64_t c = 0; c < 2 * pp; ++c)
          s.weights.push_back(everyChunk ? StepWeights{weight(random),
                                                       weight(random),
                                                       weight(random)}
                                         : middle);
        ListPoint parting[3];
        StartedSteps first;
        ASSERT_EQ(listSchedule(s, rules[0], first,
                               std::numeric_limits<double>::infinity(),
                               nullptr,
                               {{rules[1], &parting[1]},
                                {rules[2], &parting[2]}})
                      .status,
                  ListOutcome::Planned);
        for (int j : {1, 2}) {
          StartedSteps alone, again;
          ListOutcome whole = listSchedule(s, rules[j], alone);
          ASSERT_EQ(whole.status, ListOutcome::Planned);
          if (!parting[j].reached) {
            EXPECT_EQ(getListOrders(s, alone), getListOrders(s, first))
                << "pp=" << pp << " M=" << M;
            continue;
          }
          EXPECT_LT(parting[j].started.size(), alone.size());
          ListOutcome from =
              listSchedule(s, rules[j], again,
                           std::numeric_limits<double>::infinity(),
                           &parting[j]);
          EXPECT_EQ(getListOrders(s, again), getListOrders(s, alone))
              << "pp=" << pp << " M=" << M;
          EXPECT_EQ(from.end, whole.end);
          ++resumed;
        }
      }
  EXPECT_GT(resumed, 10);
}

// A replay is compiled by the first one and run from the program after
// (while a SymbolicCache keeps it): the same span to the bit.
TEST(PipelineSchedule, CompiledReplaysGiveTheFirstReplaysSpan) {
  std::mt19937 random(17);
  std::uniform_real_distribution<double> weight(0.1, 3.0);
  SymbolicCache cache;
  for (ScheduleKind kind : allScheduleKinds())
    for (int64_t pp : {2, 4})
      for (int64_t M : {8, 12}) {
        ScheduleShape s{kind, pp, isVShaped(kind) ? 2 : 1, M};
        if (!checkSchedule(s).empty())
          continue;
        std::vector<StepWeights> first, second;
        for (int64_t c = 0; c < pp * s.virtualStages; ++c) {
          first.push_back({weight(random), weight(random), weight(random)});
          second.push_back({weight(random), weight(random), weight(random)});
        }
        std::optional<ScheduleSpan> a = simulateSpan(s, first);
        std::optional<ScheduleSpan> b = simulateSpan(s, second);
        std::optional<ScheduleSpan> againA = simulateSpan(s, first);
        std::optional<Timeline> timelineB = simulateTimeline(s, second);
        ASSERT_TRUE(a && b && againA && timelineB);
        EXPECT_EQ(a->end, againA->end);
        EXPECT_EQ(a->busiest, againA->busiest);
        EXPECT_NE(a->end, b->end);
        EXPECT_EQ(getSpan(*timelineB).end, b->end);
        EXPECT_EQ(getSpan(*timelineB).busiest, b->busiest);
      }
}

// A fixed schedule's program, and ZB-V's planned steps, are kept for the
// process (a search's later compiled steps replay them): under another
// SymbolicCache, and with none (planned and compiled afresh), the same
// orders, and the same span to the bit as the first replay.
TEST(PipelineSchedule, KeptReplaysGiveTheSpanOfFreshOnes) {
  std::mt19937 random(19);
  std::uniform_real_distribution<double> weight(0.1, 3.0);
  int64_t compared = 0, otherOrders = 0;
  for (ScheduleKind kind : allScheduleKinds())
    for (int64_t pp : {2, 3, 4})
      for (int64_t M : {6, 9}) {
        ScheduleShape s{kind, pp, isVShaped(kind) ? 2 : 1, M};
        if (!checkSchedule(s).empty())
          continue;
        std::vector<StepWeights> times;
        for (int64_t c = 0; c < pp * s.virtualStages; ++c)
          times.push_back({weight(random), weight(random), weight(random)});
        if (orderDependsOnWeights(s))
          s.weights = times;
        std::optional<ScheduleSpan> spans[3];
        StageOrders orders[3];
        for (int round = 0; round < 2; ++round) {
          SymbolicCache cache;
          spans[round] = simulateSpan(s, times);
          orders[round] = *getStageSchedules(s);
        }
        spans[2] = simulateSpan(s, times);
        orders[2] = *getStageSchedules(s);
        EXPECT_EQ(orders[0], orders[2]);
        EXPECT_EQ(orders[1], orders[2]);
        // Other step times: ZB-V's orders planned for them, not the kept.
        if (orderDependsOnWeights(s)) {
          ScheduleShape other = s;
          for (StepWeights &w : other.weights)
            w = {w.inputGrad, 4 * w.forward, w.weightGrad / 4};
          StageOrders kept;
          {
            SymbolicCache cache;
            kept = *getStageSchedules(other);
          }
          EXPECT_EQ(kept, *getStageSchedules(other));
          otherOrders += kept != orders[2];
        }
        for (const std::optional<ScheduleSpan> &span : spans) {
          ASSERT_TRUE(span);
          EXPECT_EQ(span->end, spans[2]->end)
              << stringifyScheduleKind(kind).str();
          EXPECT_EQ(span->busiest, spans[2]->busiest);
        }
        ++compared;
      }
  EXPECT_GT(compared, 20);
  EXPECT_GT(otherOrders, 0);
}

TEST(PipelineSchedule, TimelineSpanIsTheReplayedSpanToTheBit) {
  // Weights that do not add up exactly, so that another order of sums
  // would show.
  std::mt19937 random(11);
  std::uniform_real_distribution<double> weight(0.1, 3.0);
  int64_t compared = 0;
  for (ScheduleKind kind : allScheduleKinds())
    for (int64_t pp : {2, 4, 6})
      for (int64_t v : {1, 2})
        for (int64_t M : {6, 12, 25}) {
          ScheduleShape s{kind, pp, v, M};
          if (!checkSchedule(s).empty())
            continue;
          std::vector<StepWeights> times;
          for (int64_t c = 0; c < pp * v; ++c)
            times.push_back({weight(random), weight(random), weight(random)});
          std::optional<Timeline> timeline = simulateTimeline(s, times);
          std::optional<ScheduleSpan> replayed = simulateSpan(s, times);
          ASSERT_TRUE(timeline && replayed);
          ScheduleSpan span = getSpan(*timeline);
          EXPECT_EQ(span.end, replayed->end);
          EXPECT_EQ(span.busiest, replayed->busiest);
          EXPECT_GT(span.end, 0);
          ++compared;
        }
  EXPECT_GT(compared, 50);
}

TEST(PipelineSchedule, ZeroBubbleVRunsAV) {
  for (int64_t pp : stageCounts())
    for (int64_t c = 0; c < 2 * pp; ++c)
      EXPECT_EQ(getPhysicalStage(ScheduleKind::zb_v, pp, c),
                c < pp ? c : 2 * pp - 1 - c);
  EXPECT_EQ(checkSchedule({ScheduleKind::zb_v, 4, 1, 8}),
            "the zb-v schedule runs 2 virtual stages per rank");
}

// DualPipeV (DeepSeek's DualPipe repository, the V cut from DualPipe): its
// bubble is (PP/2 - 1)(F&B + B - 3W) for PP stages on PP/2 ranks, with B the
// whole backward and F&B an overlapped forward-and-backward pair, which
// takes F + B when compute does not overlap (steps per chunk); at most
// PP + 1 chunk steps in flight on a rank.
TEST(PipelineSchedule, DualPipeVCriticalPathIsThePublishedValue) {
  const std::vector<std::array<double, 3>> chunkTimes = {
      {1, 1, 1}, {1, 1, 0.5}, {2, 2, 1}};
  for (auto [f, b, w] : chunkTimes)
    for (int64_t pp : stageCounts())
      for (int64_t M : {2 * pp, 2 * pp + 1, 3 * pp, 4 * pp}) {
        ScheduleShape s{ScheduleKind::dualpipe_v, pp, 2, M};
        ASSERT_EQ(checkSchedule(s), "");
        expectComplete(s);
        // simulateSchedule takes a whole stage's times: two chunks.
        std::optional<double> t = simulateSchedule(s, 2 * f, 2 * b, 2 * w);
        ASSERT_TRUE(t.has_value()) << "pp=" << pp << " M=" << M;
        double PP = 2 * double(pp), whole = b + w, pairTime = f + whole;
        double bubble = (PP / 2 - 1) * (pairTime + whole - 3 * w);
        EXPECT_DOUBLE_EQ(*t, 2 * double(M) * (f + b + w) + bubble)
            << "pp=" << pp << " M=" << M << " F=" << f << " W=" << w;
        for (int64_t p = 0; p < pp; ++p)
          EXPECT_EQ(2 * getPeakInFlight(s, p), PP + 1);
      }
  EXPECT_EQ(checkSchedule({ScheduleKind::dualpipe_v, 4, 2, 7}),
            "the dualpipe-v schedule needs at least 2 pp micro-batches: M = "
            "7 is below 2 pp = 8");
}

// DualPipe (DeepSeek-V3 technical report, table 2): two copies of pp stages
// fed from both ends, M / 2 micro-batches each; bubble (PP/2 - 1)(F&B + B -
// 3W) for PP = pp ranks, B the whole backward, F&B a pair (F + B without
// overlapped compute); PP + 1 stage activations in flight at most. The
// formula is exact where the report's figure draws it, a forward as long as
// an input gradient; otherwise the phase boundaries shift it by less than
// PP/2 times their difference.
TEST(PipelineSchedule, DualPipeCriticalPathIsThePublishedValue) {
  const std::vector<std::array<double, 3>> stageTimes = {
      {1, 1, 1}, {1, 1, 0.5}, {2, 2, 1}, {1, 2, 1}, {2, 1, 1}, {1, 3, 1}};
  for (auto [f, b, w] : stageTimes)
    for (int64_t pp : {2, 4, 6, 8})
      for (int64_t M : {2 * pp, 2 * pp + 2, 3 * pp, 4 * pp}) {
        ScheduleShape s{ScheduleKind::dualpipe, pp, 2, M};
        ASSERT_EQ(checkSchedule(s), "") << "pp=" << pp << " M=" << M;
        expectComplete(s);
        std::optional<double> t = simulateSchedule(s, f, b, w);
        ASSERT_TRUE(t.has_value()) << "pp=" << pp << " M=" << M;
        double PP = double(pp), whole = b + w, pairTime = f + whole;
        double bubble = (PP / 2 - 1) * (pairTime + whole - 3 * w);
        double published = double(M) * (f + b + w) + bubble;
        if (f == b)
          EXPECT_DOUBLE_EQ(*t, published)
              << "pp=" << pp << " M=" << M << " F=" << f << " W=" << w;
        else
          EXPECT_LE(std::abs(*t - published), PP / 2 * std::abs(f - b))
              << "pp=" << pp << " M=" << M << " F=" << f << " B=" << b;
        for (int64_t p = 0; p < pp; ++p)
          EXPECT_EQ(getPeakInFlight(s, p), PP + 1)
              << "pp=" << pp << " M=" << M << " rank " << p;
      }
}

TEST(PipelineSchedule, DualPipeFeedsHalfTheMicroBatchesFromEachEnd) {
  ScheduleShape s{ScheduleKind::dualpipe, 4, 2, 12};
  for (int64_t c = 0; c < 8; ++c) {
    EXPECT_EQ(getPhysicalStage(ScheduleKind::dualpipe, 4, c),
              c < 4 ? c : 7 - c);
    ChunkChain chain = getChunkChain(s, c);
    EXPECT_EQ(chain.first, c < 4 ? 0 : 4);
    EXPECT_EQ(chain.last, c < 4 ? 3 : 7);
    EXPECT_EQ(chain.firstBatch, c < 4 ? 0 : 6);
    EXPECT_EQ(chain.endBatch, c < 4 ? 6 : 12);
  }
  // Every step of a chunk is one of its own micro-batches.
  std::shared_ptr<const StageOrders> orders = getStageSchedules(s);
  for (const std::vector<PipelineStep> &rank : *orders)
    for (const PipelineStep &st : rank) {
      ChunkChain chain = getChunkChain(s, st.chunk);
      EXPECT_GE(st.microbatch, chain.firstBatch);
      EXPECT_LT(st.microbatch, chain.endBatch);
    }
  EXPECT_EQ(checkSchedule({ScheduleKind::dualpipe, 3, 2, 12}),
            "the dualpipe schedule needs an even pp (each rank's mirror, pp "
            "- 1 - r, is another rank): pp = 3");
  EXPECT_EQ(checkSchedule({ScheduleKind::dualpipe, 4, 2, 9}),
            "the dualpipe schedule feeds half the micro-batches from each end "
            "and needs an even count: M = 9");
  EXPECT_EQ(checkSchedule({ScheduleKind::dualpipe, 4, 2, 6}),
            "the dualpipe schedule needs at least 2 pp micro-batches: M = 6 "
            "is below 2 pp = 8");
}

TEST(PipelineSchedule, InterleavedNeedsMultipleOfStages) {
  ScheduleShape s{ScheduleKind::interleaved, 4, 2, 6};
  EXPECT_EQ(checkSchedule(s),
            "the interleaved schedule needs a micro-batch count that is a "
            "multiple of pp: M = 6 is not a multiple of pp = 4");
  EXPECT_EQ(checkSchedule({ScheduleKind::one_f_one_b, 4, 2, 8}),
            "only the interleaved schedule has virtual stages");
}

/// What a walk of every step of `order` finds, with per chunk `kept` bytes
/// per micro-batch, `weights` of them (and what the input gradient adds)
/// held from the input to the weight gradient, and `transient` bytes while
/// a forward (index 0) or backward step (1) of it runs: the first step of
/// the largest live-plus-transient bytes, and the in-flight micro-batches
/// at the first step of the most kept.
struct WalkPeak {
  int64_t peak = 0, peakKept = 0, inFlightAtPeakKept = 0;
  PipelineStep peakStep{StepKind::Forward, -1, -1};
};
WalkPeak walk(llvm::ArrayRef<PipelineStep> order,
              const std::map<int64_t, int64_t> &kept,
              const std::map<int64_t, int64_t> &weights,
              const std::map<int64_t, std::array<int64_t, 2>> &transient) {
  WalkPeak out;
  int64_t live = 0, inFlight = 0;
  for (const PipelineStep &st : order) {
    if (st.isForward()) {
      live += kept.at(st.chunk);
      ++inFlight;
    }
    int64_t now = live + transient.at(st.chunk)[st.isForward() ? 0 : 1];
    if (out.peakKept < live) {
      out.peakKept = live;
      out.inFlightAtPeakKept = inFlight;
    }
    if (out.peak < now) {
      out.peak = now;
      out.peakStep = st;
    }
    if (st.kind == StepKind::InputGrad)
      live += weights.at(st.chunk) - kept.at(st.chunk);
    if (st.kind == StepKind::WeightGrad) {
      live -= weights.at(st.chunk);
      --inFlight;
    }
    if (st.kind == StepKind::Backward) {
      live -= kept.at(st.chunk);
      --inFlight;
    }
  }
  return out;
}

/// The same from the order's moments.
WalkPeak
fromMoments(const StageMoments &moments, const std::map<int64_t, int64_t> &kept,
            const std::map<int64_t, int64_t> &weights,
            const std::map<int64_t, std::array<int64_t, 2>> &transient) {
  auto live = [&](const StageMoment &m) {
    int64_t bytes = 0;
    for (auto [i, c] : llvm::enumerate(moments.chunks))
      bytes += moments.whole(m)[i] * kept.at(c) +
               moments.awaitingWeights(m)[i] * weights.at(c);
    return bytes;
  };
  WalkPeak out;
  for (const StageMoment &m : moments.kept)
    if (out.peakKept < live(m)) {
      out.peakKept = live(m);
      out.inFlightAtPeakKept = 0;
      for (auto [whole, awaiting] :
           llvm::zip(moments.whole(m), moments.awaitingWeights(m)))
        out.inFlightAtPeakKept += whole + awaiting;
    }
  for (const StageMoment &m : moments.running) {
    int64_t now =
        live(m) +
        transient.at(moments.chunks[m.position])[m.step.isForward() ? 0 : 1];
    if (out.peak < now) {
      out.peak = now;
      out.peakStep = m.step;
    }
  }
  return out;
}

TEST(PipelineSchedule, MomentsFindWhatAWalkOfEveryStepFinds) {
  std::mt19937_64 random(7);
  int64_t compared = 0;
  for (ScheduleKind kind : allScheduleKinds())
    for (int64_t pp : {2, 4, 6})
      for (int64_t v : {1, 2, 3})
        for (int64_t M : {2, 6, 12, 24}) {
          ScheduleShape s{kind, pp, v, M};
          if (!checkSchedule(s).empty())
            continue;
          std::shared_ptr<const StageOrders> orders = getStageSchedules(s);
          std::shared_ptr<const std::vector<StageMoments>> moments =
              getScheduleMoments(s);
          ASSERT_EQ(moments->size(), orders->size());
          for (int trial = 0; trial < 20; ++trial) {
            // Small values, zeros among them, so that ties happen.
            std::map<int64_t, int64_t> kept, weights;
            std::map<int64_t, std::array<int64_t, 2>> transient;
            for (int64_t c = 0; c < pp * v; ++c) {
              kept[c] = int64_t(random() % 4);
              weights[c] = int64_t(random() % 3);
              transient[c] = {int64_t(random() % 5), int64_t(random() % 5)};
            }
            for (auto [order, m] : llvm::zip(*orders, *moments)) {
              WalkPeak expected = walk(order, kept, weights, transient);
              WalkPeak got = fromMoments(m, kept, weights, transient);
              EXPECT_EQ(got.peak, expected.peak);
              EXPECT_EQ(got.peakStep, expected.peakStep);
              EXPECT_EQ(got.peakKept, expected.peakKept);
              EXPECT_EQ(got.inFlightAtPeakKept, expected.inFlightAtPeakKept);
              ++compared;
            }
          }
        }
  EXPECT_GT(compared, 1000);
}

} // namespace
