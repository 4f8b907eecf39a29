//===- PlanSpaceTest.cpp - The plans a search enumerates ------------------===//

#include "Stage/Explore/PlanSpace.h"

#include "gtest/gtest.h"

#include <set>
#include <tuple>

using namespace mlir::stage::explore;

namespace {

/// A small dense model every degree of 8 GPUs divides.
ModelLimits tinyDense() {
  ModelLimits m;
  m.layers = 8;
  m.heads = 8;
  m.kvHeads = 8;
  m.ffn = 64;
  m.vocab = 512;
  m.batch = 16;
  m.seq = 64;
  return m;
}

TEST(PlanSpace, EveryPlanUsesExactlyTheGpus) {
  SpaceOptions o;
  o.gpus = 8;
  PlanSpace s = enumeratePlans(tinyDense(), o);
  ASSERT_FALSE(s.plans.empty());
  std::set<std::string> seen;
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> degrees;
  for (const Plan &p : s.plans) {
    EXPECT_EQ(p.dp * p.tp * p.pp * p.cp * p.ep, 8) << p.options();
    EXPECT_EQ(p.ep, 1) << "a dense model: " << p.options();
    EXPECT_TRUE(seen.insert(p.options()).second) << "twice: " << p.options();
    // One sample per micro-batch and replica at least.
    EXPECT_EQ(16 % (p.dp * p.ep * p.microBatches), 0) << p.options();
    degrees.insert({p.dp, p.tp, p.pp, p.cp});
  }
  // 8 = 2^3 over four axes (ep stays 1): C(3 + 3, 3) = 20 ordered
  // factorizations, all valid for this model.
  EXPECT_EQ(degrees.size(), 20u);
}

TEST(PlanSpace, SchedulesKeepTheirConstraints) {
  SpaceOptions o;
  o.gpus = 2;
  o.constraints = {{"pp", Constraint::EQ, 2}};
  PlanSpace s = enumeratePlans(tinyDense(), o);
  std::set<std::pair<std::string, int64_t>> byScheduleAndM;
  for (const Plan &p : s.plans) {
    byScheduleAndM.insert({p.schedule, p.microBatches});
    if (p.schedule == "interleaved")
      EXPECT_EQ(p.microBatches % 2, 0) << p.options();
    if (p.schedule == "dualpipe" || p.schedule == "dualpipe-v")
      EXPECT_GE(p.microBatches, 4) << p.options();
  }
  EXPECT_TRUE(byScheduleAndM.count({"dualpipe", 4}));
  EXPECT_FALSE(byScheduleAndM.count({"dualpipe", 2}));
  EXPECT_FALSE(byScheduleAndM.count({"interleaved", 1}));
  EXPECT_TRUE(byScheduleAndM.count({"zb-h1", 1}));
  EXPECT_GT(s.excluded["schedule: DualPipe: fewer than 2 pp micro-batches"], 0);
}

TEST(PlanSpace, ExpertsSplitOnlyWhereTheyDivide) {
  ModelLimits m = tinyDense();
  m.experts = 6;
  SpaceOptions o;
  o.gpus = 4;
  PlanSpace s = enumeratePlans(m, o);
  std::set<int64_t> eps;
  for (const Plan &p : s.plans)
    eps.insert(p.ep);
  EXPECT_EQ(eps, (std::set<int64_t>{1, 2}));
  EXPECT_GT(s.excluded["degrees: ep does not divide the experts"], 0);
}

TEST(PlanSpace, ZeroAndSequenceParallelismWhereTheyMeanSomething) {
  SpaceOptions o;
  o.gpus = 4;
  for (const Plan &p : enumeratePlans(tinyDense(), o).plans) {
    if (p.dp * p.cp * p.ep == 1)
      EXPECT_EQ(p.zero, 0) << p.options();
    if (p.tp == 1)
      EXPECT_FALSE(p.sp) << p.options();
  }
}

TEST(PlanSpace, ConstraintsBoundEveryField) {
  std::string error;
  std::optional<std::vector<Constraint>> c =
      parseConstraints("tp<=2 pp>1 zero!=3 M=4", error);
  ASSERT_TRUE(c.has_value()) << error;
  SpaceOptions o;
  o.gpus = 8;
  o.constraints = *c;
  PlanSpace s = enumeratePlans(tinyDense(), o);
  ASSERT_FALSE(s.plans.empty());
  for (const Plan &p : s.plans) {
    EXPECT_LE(p.tp, 2);
    EXPECT_GT(p.pp, 1);
    EXPECT_NE(p.zero, 3);
    EXPECT_EQ(p.microBatches, 4);
  }
  EXPECT_GT(s.excluded["constraints"], 0);
  for (const char *bad : {"tq<=2", "tp<<2", "tp<=x", "<=2", "tp"}) {
    EXPECT_FALSE(parseConstraints(bad, error).has_value()) << bad;
    EXPECT_EQ(error, std::string("constraint '") + bad +
                         "': expected FIELD OP NUMBER, FIELD one of dp tp pp "
                         "cp ep M v zero B, OP one of <= < >= > = !=");
  }
}

TEST(PlanSpace, OptionsSpellEveryField) {
  Plan p;
  p.dp = 2, p.tp = 8, p.pp = 8, p.microBatches = 16;
  p.schedule = "interleaved", p.virtualStages = 2;
  p.zero = 1, p.recompute = "selective", p.sp = true;
  EXPECT_EQ(p.options(),
            "dp=2 tp=8 pp=8 cp=1 ep=1 micro-batches=16 schedule=interleaved "
            "virtual-stages=2 zero=1 recompute=selective sp=1");
}

TEST(PlanSpace, ServingPlansRangeOverTheBatch) {
  SpaceOptions o;
  o.gpus = 4;
  o.serving = true;
  o.decodeTokens = 32;
  ModelLimits m = tinyDense();
  m.batch = 12; // powers of two below it, then 12 itself
  PlanSpace s = enumeratePlans(m, o);
  ASSERT_FALSE(s.plans.empty());
  std::set<int64_t> batches;
  std::set<std::pair<std::string, int64_t>> seen;
  for (const Plan &p : s.plans) {
    EXPECT_TRUE(p.serving);
    EXPECT_EQ(p.dp * p.tp * p.pp * p.cp * p.ep, 4) << p.options();
    EXPECT_EQ(p.cp, 1) << "every request decodes: " << p.options();
    EXPECT_EQ(p.batch % (p.dp * p.ep * p.microBatches), 0) << p.options();
    if (p.pp == 1)
      EXPECT_EQ(p.microBatches, 1) << p.options();
    EXPECT_EQ(p.options().find("schedule"), std::string::npos);
    EXPECT_NE(p.options().find("decode-tokens=32"), std::string::npos);
    EXPECT_TRUE(seen.insert({p.options(), p.batch}).second) << p.options();
    batches.insert(p.batch);
  }
  EXPECT_EQ(batches, (std::set<int64_t>{1, 2, 4, 8, 12}));
  EXPECT_GT(s.excluded.at("batch: dp x ep does not divide it"), 0);
}

} // namespace
