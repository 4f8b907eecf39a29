//===- PipelineSchedule.cpp - Orders of micro-batch steps -----------------===//

#include "Stage/Analysis/PipelineSchedule.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace mlir::stage;

std::string mlir::stage::checkSchedule(const ScheduleShape &s) {
  if (s.stages < 1 || s.virtualStages < 1 || s.microBatches < 1)
    return "stages, virtual stages and micro-batches must be positive";
  if (s.kind == ScheduleKind::interleaved && s.microBatches % s.stages != 0)
    return "the interleaved schedule needs a micro-batch count that is a "
           "multiple of pp: M = " +
           std::to_string(s.microBatches) + " is not a multiple of pp = " +
           std::to_string(s.stages);
  if (s.kind != ScheduleKind::interleaved && s.virtualStages != 1)
    return "only the interleaved schedule has virtual stages";
  return "";
}

/// Megatron-LM's interleaved schedule: step k of the forward (or backward)
/// sequence of a stage runs chunk (k / pp) % v (reversed for backward) on
/// micro-batch (k / (pp v)) pp + k % pp.
static PipelineStep interleavedStep(const ScheduleShape &s, int64_t p,
                                    int64_t k, bool forward) {
  int64_t pp = s.stages, v = s.virtualStages;
  int64_t local = (k % (pp * v)) / pp;
  if (!forward)
    local = v - 1 - local;
  int64_t mb = (k / (pp * v)) * pp + k % pp;
  return {forward, local * pp + p, mb};
}

std::vector<PipelineStep>
mlir::stage::getStageSchedule(const ScheduleShape &s, int64_t p) {
  std::vector<PipelineStep> steps;
  int64_t M = s.microBatches, pp = s.stages;
  switch (s.kind) {
  case ScheduleKind::gpipe:
    for (int64_t m = 0; m < M; ++m)
      steps.push_back({true, p, m});
    for (int64_t m = 0; m < M; ++m)
      steps.push_back({false, p, m});
    return steps;
  case ScheduleKind::one_f_one_b: {
    int64_t warmup = std::min(pp - p - 1, M);
    int64_t f = 0, b = 0;
    for (; f < warmup; ++f)
      steps.push_back({true, p, f});
    for (; f < M; ++f, ++b) {
      steps.push_back({true, p, f});
      steps.push_back({false, p, b});
    }
    for (; b < M; ++b)
      steps.push_back({false, p, b});
    return steps;
  }
  case ScheduleKind::interleaved: {
    int64_t v = s.virtualStages, total = M * v;
    int64_t warmup = std::min((pp - p - 1) * 2 + (v - 1) * pp, total);
    int64_t f = 0, b = 0;
    for (; f < warmup; ++f)
      steps.push_back(interleavedStep(s, p, f, true));
    for (; f < total; ++f, ++b) {
      steps.push_back(interleavedStep(s, p, f, true));
      steps.push_back(interleavedStep(s, p, b, false));
    }
    for (; b < total; ++b)
      steps.push_back(interleavedStep(s, p, b, false));
    return steps;
  }
  }
  return steps;
}

std::optional<Timeline> mlir::stage::simulateTimeline(const ScheduleShape &s,
                                                     double forward,
                                                     double backward) {
  size_t chunks = size_t(s.stages * s.virtualStages);
  std::vector<double> f(chunks, forward / double(s.virtualStages)),
      b(chunks, backward / double(s.virtualStages));
  return simulateTimeline(s, f, b);
}

std::optional<Timeline>
mlir::stage::simulateTimeline(const ScheduleShape &s, ArrayRef<double> forward,
                              ArrayRef<double> backward) {
  int64_t pp = s.stages, chunks = pp * s.virtualStages;
  if (int64_t(forward.size()) != chunks || int64_t(backward.size()) != chunks)
    return std::nullopt;
  std::vector<std::vector<PipelineStep>> orders;
  for (int64_t p = 0; p < pp; ++p)
    orders.push_back(getStageSchedule(s, p));
  // End time of every finished step, keyed by (forward, chunk, micro-batch).
  std::map<std::tuple<bool, int64_t, int64_t>, double> done;
  std::vector<size_t> next(pp, 0);
  std::vector<double> free(pp, 0.0);
  Timeline timeline(pp);
  size_t remaining = 0;
  for (auto &o : orders)
    remaining += o.size();
  while (remaining) {
    bool progress = false;
    for (int64_t p = 0; p < pp; ++p) {
      if (next[p] == orders[p].size())
        continue;
      const PipelineStep &st = orders[p][next[p]];
      double ready = free[p];
      auto need = [&](bool fwd, int64_t c) -> bool {
        auto it = done.find({fwd, c, st.microbatch});
        if (it == done.end())
          return false;
        ready = std::max(ready, it->second);
        return true;
      };
      bool ok = st.forward ? (st.chunk == 0 || need(true, st.chunk - 1))
                           : (need(true, st.chunk) &&
                              (st.chunk == chunks - 1 || need(false, st.chunk + 1)));
      if (!ok)
        continue;
      double end = ready + (st.forward ? forward[st.chunk] : backward[st.chunk]);
      done[{st.forward, st.chunk, st.microbatch}] = end;
      timeline[p].push_back({st, ready, end});
      free[p] = end;
      ++next[p];
      --remaining;
      progress = true;
    }
    if (!progress)
      return std::nullopt;
  }
  return timeline;
}

std::optional<double> mlir::stage::simulateSchedule(const ScheduleShape &s,
                                                    double forward,
                                                    double backward) {
  std::optional<Timeline> t = simulateTimeline(s, forward, backward);
  if (!t)
    return std::nullopt;
  double makespan = 0;
  for (const std::vector<TimedStep> &stage : *t)
    for (const TimedStep &step : stage)
      makespan = std::max(makespan, step.end);
  return makespan;
}

double mlir::stage::getBubbleFraction(const ScheduleShape &s) {
  return double(s.stages - 1) / double(s.virtualStages * s.microBatches);
}
