//===- SearchFormatTest.cpp - The Pareto front of a search ----------------===//

#include "Stage/Explore/SearchFormat.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

using namespace mlir::stage::explore;

namespace {

Candidate candidate(double seconds, int64_t bytes) {
  Candidate c;
  c.estimate.iterationSeconds = seconds;
  c.estimate.peakBytes = bytes;
  return c;
}

TEST(SearchFormat, ParetoFrontKeepsWhatNothingBeats) {
  // Ranked by time: (1 s, 50), (2 s, 60), (2 s, 40), (3 s, 45), (4 s, 10).
  SearchResult r;
  r.ranked = {candidate(1, 50), candidate(2, 60), candidate(2, 40),
              candidate(3, 45), candidate(4, 10)};
  // (2 s, 60) is beaten by (1 s, 50); (3 s, 45) by (2 s, 40).
  EXPECT_EQ(getParetoFront(r), (std::vector<size_t>{0, 2, 4}));
}

TEST(SearchFormat, JsonIsAnArrayOfTheTopPlans) {
  SearchResult r;
  r.ranked = {candidate(1, 50), candidate(2, 40), candidate(3, 30)};
  r.ranked[0].plan.tp = 2;
  SearchTitle t;
  t.gpus = 2;
  t.top = 2;
  std::string text;
  llvm::raw_string_ostream os(text);
  printSearchJson(r, t, os);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
  ASSERT_TRUE(bool(v)) << text;
  const llvm::json::Array *a = v->getAsArray();
  ASSERT_TRUE(a);
  ASSERT_EQ(a->size(), 2u);
  const llvm::json::Object *best = (*a)[0].getAsObject();
  EXPECT_EQ(best->getString("plan")->str(), r.ranked[0].plan.options());
  EXPECT_EQ(*best->getInteger("gpus"), 2);
  EXPECT_EQ(*best->getInteger("peak_memory_bytes"), 50);
  EXPECT_EQ(*best->getNumber("iteration_seconds"), 1.0);
}

} // namespace
