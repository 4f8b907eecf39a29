//===- RoutingTest.cpp - Which experts a step reaches ---------------------===//

#include "Stage/Support/Routing.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace stage;

namespace {

std::vector<double> sharesOf(const char *spec, int64_t E) {
  std::string error;
  std::optional<Routing> r = Routing::parse(spec, error);
  EXPECT_TRUE(r) << error;
  std::optional<std::vector<double>> s = r->shares(E, error);
  EXPECT_TRUE(s) << error;
  return *s;
}

TEST(Routing, UniformReachesTheExpectedDistinctExperts) {
  // 8 experts, top-2, 4 tokens: 8 (1 - (3/4)^4) = 5.46875 reached.
  RoutingEffect e = getRoutingEffect(sharesOf("uniform", 8), 2, 1, 4);
  EXPECT_DOUBLE_EQ(e.reached * 8, 8 * (1 - std::pow(0.75, 4)));
  EXPECT_DOUBLE_EQ(e.busiest, 1);
}

TEST(Routing, OneTokenOnEightRanksMakesOneRankTheBusiest) {
  // One token, top-2 of 8 experts, one expert per rank: a rank reaches one
  // expert or none, and some rank always reaches one; it gets the token
  // while the mean rank gets 2/8 of one.
  RoutingEffect e = getRoutingEffect(sharesOf("uniform", 8), 2, 8, 1);
  EXPECT_DOUBLE_EQ(e.reached, 0.25);
  EXPECT_DOUBLE_EQ(e.reachedBusiest, 1);
  EXPECT_DOUBLE_EQ(e.busiest, 4);
}

TEST(Routing, ManyTokensBalanceUniformRouting) {
  RoutingEffect e = getRoutingEffect(sharesOf("uniform", 64), 6, 8, 1e6);
  EXPECT_DOUBLE_EQ(e.reached, 1);
  EXPECT_DOUBLE_EQ(e.busiest, 1);
}

TEST(Routing, ZipfLoadsTheFirstBlock) {
  // Shares 1/(e+1), normalized, over 8 experts in blocks of 2: the first
  // rank's share is (1 + 1/2) / H_8 of the tokens, against 1/4 on average.
  std::vector<double> s = sharesOf("zipf:1", 8);
  double h8 = 0;
  for (int e = 1; e <= 8; ++e)
    h8 += 1.0 / e;
  RoutingEffect e = getRoutingEffect(s, 1, 4, 1e6);
  EXPECT_NEAR(e.busiest, 1.5 / h8 * 4, 1e-9);
}

TEST(Routing, SamplingIsTheSameEveryRun) {
  std::vector<double> s = sharesOf("zipf:1.2", 64);
  RoutingEffect a = getRoutingEffect(s, 6, 8, 10);
  RoutingEffect b = getRoutingEffect(s, 6, 8, 10);
  EXPECT_EQ(a.busiest, b.busiest);
  EXPECT_EQ(a.reachedBusiest, b.reachedBusiest);
  EXPECT_GE(a.reachedBusiest, a.reached);
}

TEST(Routing, MeasuredLoadsAreNormalizedAndCounted) {
  std::string error;
  std::optional<Routing> r = Routing::parse("loads:2/1/1", error);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->loads[0], 0.5);
  EXPECT_FALSE(r->shares(4, error));
  EXPECT_NE(error.find("names 3 expert loads"), std::string::npos);
  EXPECT_FALSE(Routing::parse("loads:1/x", error));
  EXPECT_FALSE(Routing::parse("zipf:-1", error));
}

} // namespace
