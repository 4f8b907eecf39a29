//===- Sweep.cpp - The best plan as one number of the device moves --------===//

#include "Stage/Explore/Sweep.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::explore;

std::vector<double> SweepRange::values() const {
  std::vector<double> v;
  for (int64_t i = 0; i < steps; ++i)
    v.push_back(steps == 1 ? from
                           : from + (to - from) * double(i) / double(steps - 1));
  return v;
}

std::optional<SweepRange> explore::parseSweep(llvm::StringRef text,
                                              const DeviceModel &device,
                                              std::string &error) {
  auto [key, range] = text.split('=');
  llvm::SmallVector<llvm::StringRef> parts;
  range.split(parts, ':');
  SweepRange r;
  r.key = key.trim().str();
  if (key.empty() || parts.size() != 3 || parts[0].trim().getAsDouble(r.from) ||
      parts[1].trim().getAsDouble(r.to) ||
      parts[2].trim().getAsInteger(10, r.steps) || r.steps < 1 ||
      r.steps > 1000) {
    error = "expected KEY=FROM:TO:STEPS, as in network_bandwidth=25e9:100e9:4 "
            "(1 to 1000 steps)";
    return std::nullopt;
  }
  // Every value must be one the profile takes.
  for (double v : r.values()) {
    DeviceModel probe = device;
    if (!probe.set(r.key, v, error))
      return std::nullopt;
  }
  return r;
}

FailureOr<std::vector<SweepPoint>>
explore::sweepPlans(ModuleOp model, const SearchRequest &base,
                    const SweepRange &range) {
  std::vector<SweepPoint> points;
  for (double v : range.values()) {
    SearchRequest r = base;
    std::string error;
    if (!r.device.set(range.key, v, error))
      return model.emitError("--sweep: ") << error;
    FailureOr<SearchResult> result = searchPlans(model, r);
    if (failed(result))
      return failure();
    SweepPoint p;
    p.value = v;
    p.fitting = int64_t(result->ranked.size());
    if (!result->ranked.empty())
      p.best = result->ranked.front();
    points.push_back(std::move(p));
  }
  return points;
}
