//===- SymbolicCacheTest.cpp - What evaluated numbers are kept under ------===//

#include "Stage/Analysis/CostAnalysis.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::stage;

namespace {

/// A number "evaluated" under `b` for the object `from`, counting the
/// evaluations.
struct Counted {
  int computed = 0;
  int64_t of(const void *from, const sym::Bindings &b) {
    static const char tag = 0;
    FailureOr<int64_t> v = memoizeEvaluated<int64_t>(
        &tag, from, "", b, [&]() -> FailureOr<int64_t> {
          ++computed;
          return b.at("tp") * 10 + b.at("dp");
        });
    return *v;
  }
};

const char objectA = 0, objectB = 0;

TEST(SymbolicCache, WithoutACacheEveryCallEvaluates) {
  Counted n;
  sym::Bindings b{{"tp", 2}, {"dp", 4}};
  EXPECT_EQ(n.of(&objectA, b), 24);
  EXPECT_EQ(n.of(&objectA, b), 24);
  EXPECT_EQ(n.computed, 2);
}

TEST(SymbolicCache, EqualBindingsEvaluateOncePerObject) {
  SymbolicCache cache;
  Counted n;
  sym::Bindings b{{"tp", 2}, {"dp", 4}};
  sym::Bindings same = b;
  EXPECT_EQ(n.of(&objectA, b), 24);
  EXPECT_EQ(n.of(&objectA, same), 24);
  EXPECT_EQ(n.computed, 1);
  EXPECT_EQ(n.of(&objectB, b), 24);
  EXPECT_EQ(n.computed, 2);
  sym::Bindings other{{"tp", 8}, {"dp", 1}};
  EXPECT_EQ(n.of(&objectA, other), 81);
  EXPECT_EQ(n.computed, 3);
}

TEST(SymbolicCache, AnEvaluationKeepsItsNumbersForItsBindingsAlone) {
  SymbolicCache cache;
  Counted n;
  // One map reused for plan after plan, as a search could: each
  // Evaluation's numbers are its own, whatever the map's address.
  sym::Bindings plan{{"tp", 2}, {"dp", 4}};
  {
    SymbolicCache::Evaluation evaluating(plan);
    EXPECT_EQ(n.of(&objectA, plan), 24);
    EXPECT_EQ(n.of(&objectA, plan), 24);
    EXPECT_EQ(n.computed, 1);
    // Other bindings inside it (a decode step's): evaluated and kept
    // apart, and the Evaluation's own are evaluated again after them.
    sym::Bindings step{{"tp", 3}, {"dp", 1}};
    EXPECT_EQ(n.of(&objectA, step), 31);
    EXPECT_EQ(n.of(&objectA, step), 31);
    EXPECT_EQ(n.computed, 2);
    EXPECT_EQ(n.of(&objectA, plan), 24);
    EXPECT_EQ(n.computed, 3);
  }
  plan["tp"] = 4;
  {
    SymbolicCache::Evaluation evaluating(plan);
    EXPECT_EQ(n.of(&objectA, plan), 44);
    EXPECT_EQ(n.computed, 4);
  }
  // Outside any Evaluation, equal bindings do not match a number kept
  // under one (its bindings were not kept).
  sym::Bindings copy = plan;
  EXPECT_EQ(n.of(&objectA, copy), 44);
  EXPECT_EQ(n.computed, 5);
  EXPECT_EQ(n.of(&objectA, copy), 44);
  EXPECT_EQ(n.computed, 5);
}

TEST(SymbolicCache, NestedEvaluationsRestoreTheOuterOne) {
  SymbolicCache cache;
  Counted n;
  sym::Bindings outer{{"tp", 1}, {"dp", 2}}, inner{{"tp", 5}, {"dp", 6}};
  SymbolicCache::Evaluation evaluatingOuter(outer);
  EXPECT_EQ(n.of(&objectA, outer), 12);
  {
    SymbolicCache::Evaluation evaluatingInner(inner);
    EXPECT_EQ(n.of(&objectB, inner), 56);
    EXPECT_EQ(n.of(&objectB, inner), 56);
  }
  EXPECT_EQ(n.computed, 2);
  EXPECT_EQ(n.of(&objectA, outer), 12);
  EXPECT_EQ(n.computed, 2);
}

} // namespace
