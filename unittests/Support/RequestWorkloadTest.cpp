//===- RequestWorkloadTest.cpp - Reading and drawing request streams ------===//

#include "Stage/Support/RequestWorkload.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace stage;

namespace {

TEST(RequestWorkload, JsonLinesAreSortedByArrival) {
  std::vector<Request> r;
  ASSERT_FALSE(parseRequests(
      "{\"arrival\": 2.5, \"prompt_tokens\": 10, \"output_tokens\": 3}\n\n"
      "{\"arrival\": 1, \"prompt_tokens\": 7, \"output_tokens\": 1}\n",
      false, r));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].arrival, 1);
  EXPECT_EQ(r[0].promptTokens, 7);
  EXPECT_EQ(r[1].outputTokens, 3);
}

TEST(RequestWorkload, AJsonErrorNamesItsLine) {
  std::vector<Request> r;
  std::optional<WorkloadError> e = parseRequests(
      "{\"arrival\": 0, \"prompt_tokens\": 10, \"output_tokens\": 3}\n"
      "{\"arrival\": 0, \"prompt_tokens\": 2.5, \"output_tokens\": 3}\n",
      false, r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->line, 2u);
  EXPECT_NE(e->message.find("prompt_tokens"), std::string::npos);
}

TEST(RequestWorkload, ADeeplyNestedLineIsRefusedNotParsed) {
  std::vector<Request> r;
  std::string deep = "{\"arrival\": 0, \"x\": " + std::string(100000, '[') +
                     std::string(100000, ']') + "}\n";
  std::optional<WorkloadError> e = parseRequests(deep, false, r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->line, 1u);
  EXPECT_NE(e->message.find("deep"), std::string::npos) << e->message;
}

TEST(RequestWorkload, AzureTimestampsCountFromTheFirst) {
  // Two rows 1.5 s apart across midnight of a leap day.
  std::vector<Request> r;
  ASSERT_FALSE(parseRequests("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                             "2024-02-28 23:59:59.5000000,374,44\n"
                             "2024-02-29 00:00:01.0000000,396,109\n",
                             true, r));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[1].arrival, 1.5);
  EXPECT_EQ(r[1].promptTokens, 396);
  EXPECT_EQ(r[1].outputTokens, 109);
}

TEST(RequestWorkload, ACsvErrorNamesItsColumn) {
  std::vector<Request> r;
  std::optional<WorkloadError> e =
      parseRequests("arrival,prompt_tokens,output_tokens\n0,12,x\n", true, r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->line, 2u);
  EXPECT_EQ(e->column, 6u);
}

TEST(RequestWorkload, PoissonArrivalsHaveTheirRate) {
  std::vector<Request> r;
  ASSERT_FALSE(generateRequests(
      "poisson:rate=5,count=20000,prompt=uniform:100:200,output=64,seed=7", r));
  ASSERT_EQ(r.size(), 20000u);
  // Mean gap 1/5 s; the standard error of 20000 gaps is 0.2/sqrt(20000).
  double mean = r.back().arrival / double(r.size() - 1);
  EXPECT_NEAR(mean, 0.2, 4 * 0.2 / std::sqrt(20000.0));
  for (const Request &q : r) {
    EXPECT_GE(q.promptTokens, 100);
    EXPECT_LE(q.promptTokens, 200);
    EXPECT_EQ(q.outputTokens, 64);
  }
}

TEST(RequestWorkload, TheSameSpellingDrawsTheSameStream) {
  std::vector<Request> a, b, c;
  const char *spec = "poisson:rate=2,count=100,prompt=exponential:300,"
                     "output=lognormal:128:1,seed=3";
  ASSERT_FALSE(generateRequests(spec, a));
  ASSERT_FALSE(generateRequests(spec, b));
  ASSERT_FALSE(generateRequests(
      "poisson:rate=2,count=100,prompt=exponential:300,output=lognormal:"
      "128:1,seed=4",
      c));
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival, b[i].arrival);
    EXPECT_EQ(a[i].promptTokens, b[i].promptTokens);
  }
  EXPECT_NE(a[1].arrival, c[1].arrival);
}

TEST(RequestWorkload, PeriodicWithoutARateArrivesAtOnce) {
  std::vector<Request> r;
  ASSERT_FALSE(
      generateRequests("periodic:count=3,prompt=16,output=4", r));
  for (const Request &q : r)
    EXPECT_EQ(q.arrival, 0);
  std::optional<std::string> e =
      generateRequests("poisson:count=3,prompt=16,output=4", r);
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("rate"), std::string::npos);
  e = generateRequests("poisson:rate=1,count=3,prompt=uniform:9:2,output=4", r);
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("A <= B"), std::string::npos);
}

} // namespace
