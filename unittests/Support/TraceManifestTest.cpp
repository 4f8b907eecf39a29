//===- TraceManifestTest.cpp - The manifest's text, read back -------------===//

#include "Stage/Support/TraceManifest.h"

#include "gtest/gtest.h"

using namespace stage;

namespace {

TraceManifest sample() {
  TraceManifest m;
  m.setId = "0123456789abcdef0123456789abcdef";
  m.ranks = 3;
  m.traceName = "w.%d.et";
  m.groupsFile = "w.json";
  m.groups = {18, "00000000000000ff"};
  m.traces[2] = {100, "aaaaaaaaaaaaaaaa"};
  m.traces[0] = {7, "0123456789abcdef"};
  return m;
}

TEST(TraceManifest, PrintsRanksInOrderAndReadsBack) {
  TraceManifest m = sample();
  std::string text = m.print();
  // Rank 0's line before rank 2's, whatever the insertion order.
  EXPECT_LT(text.find("[0, 7,"), text.find("[2, 100,"));
  std::string error;
  std::optional<TraceManifest> back = TraceManifest::parse(text, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->setId, m.setId);
  EXPECT_EQ(back->ranks, 3);
  EXPECT_EQ(back->traceName, "w.%d.et");
  EXPECT_EQ(back->groupsFile, "w.json");
  EXPECT_TRUE(back->groups == m.groups);
  EXPECT_EQ(back->traces.size(), 2u);
  EXPECT_TRUE(back->traces.at(2) == m.traces.at(2));
  EXPECT_FALSE(back->isComplete());
  EXPECT_EQ(back->print(), text);
  EXPECT_EQ(back->traceFile(2), "w.2.et");
}

TEST(TraceManifest, RefusesWhatItCannotTrust) {
  std::string good = sample().print(), error;
  auto withReplaced = [&](const std::string &from, const std::string &to) {
    std::string t = good;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  // A rank outside the set, twice, a short digest, a file name that leaves
  // the directory, a pattern without the rank, another format.
  for (const std::string &bad :
       {withReplaced("[2, 100", "[3, 100"), withReplaced("[2, 100", "[0, 100"),
        withReplaced("\"aaaaaaaaaaaaaaaa\"", "\"aaaa\""),
        withReplaced("\"w.json\"", "\"../w.json\""),
        withReplaced("\"w.%d.et\"", "\"w.et\""),
        withReplaced("stage-trace-set", "other"), std::string("[]")}) {
    error.clear();
    EXPECT_FALSE(TraceManifest::parse(bad, error)) << bad;
    EXPECT_FALSE(error.empty());
  }
}

TEST(TraceManifest, Names) {
  EXPECT_EQ(getManifestFileName("workload.json"), "workload.manifest.json");
  EXPECT_EQ(checkTraceName("workload.%d.et"), "");
  EXPECT_NE(checkTraceName("%d"), "");
  EXPECT_NE(checkTraceName("a/%d.et"), "");
  EXPECT_NE(checkTraceName(".w%d"), "");
  EXPECT_NE(checkTraceName("w%d%d"), "");
  EXPECT_EQ(rankOfTraceFile("w.%d.et", "w.12.et"), 12);
  EXPECT_EQ(rankOfTraceFile("w.%d.et", "w.x.et"), -1);
  // The digest is of the bytes: XXH3-64 of the empty string.
  EXPECT_EQ(fileDigest(""), "2d06800538d394c2");
}

} // namespace
