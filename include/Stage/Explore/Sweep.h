//===- Sweep.h - The best plan as one number of the device moves -*- C++ -*-===//
//
// The architect's question, "what does twice the network buy?": the plan
// search run at each point of a range of one device-profile number (a
// bandwidth, a rate, the memory, an efficiency), with the best plan and its
// time at each point.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_EXPLORE_SWEEP_H
#define STAGE_EXPLORE_SWEEP_H

#include "Stage/Explore/Search.h"

namespace mlir::stage::explore {

/// `KEY=FROM:TO:STEPS`: the profile number `KEY` (a JSON key of
/// profiles/*.json) at STEPS evenly spaced values from FROM to TO.
struct SweepRange {
  std::string key;
  double from = 0, to = 0;
  int64_t steps = 1;
  /// The values, FROM first.
  std::vector<double> values() const;
};

/// `text` as a range; nullopt with `error` saying what is wrong.
std::optional<SweepRange> parseSweep(llvm::StringRef text,
                                     const DeviceModel &device,
                                     std::string &error);

struct SweepPoint {
  double value = 0;
  /// The best plan there, if one fits (and meets a serving bound).
  std::optional<Candidate> best;
  int64_t fitting = 0;
};

/// The search of `base` at every value of `range`.
FailureOr<std::vector<SweepPoint>>
sweepPlans(ModuleOp model, const SearchRequest &base, const SweepRange &range);

} // namespace mlir::stage::explore

#endif // STAGE_EXPLORE_SWEEP_H
