//===- ListSchedule.cpp - ZB-V's orders by list scheduling ----------------===//
//
// A search plans ZB-V for every plan it evaluates (three rules each), up to
// hundreds of thousands of steps: the state is flat arrays, kept between
// calls on a thread, and a rank's pick is a few comparisons.
//
//===----------------------------------------------------------------------===//

#include "ListSchedule.h"

#include "llvm/ADT/bit.h"

#include <limits>

using namespace mlir;
using namespace mlir::stage;

namespace {
class ListScheduler {
public:
  ListScheduler(const ScheduleShape &s, Preference pref, StageOrders &orders);
  ListOutcome run(double abandonAfter);

private:
  enum Kind { Forward, InputGrad, WeightGrad };
  void lookAt(int64_t p) { toLook[size_t(p / 64)] |= uint64_t(1) << (p % 64); }
  /// (Micro-batch major: a pick reads neighbouring chunks' ends of one
  /// micro-batch.)
  size_t at(int64_t c, int64_t m) const { return size_t(m * chunks + c); }
  bool inputGradReady(int64_t c) const {
    int64_t m = nextB[c];
    return m < M && forwardDone[at(c, m)] <= t &&
           (c == chunks - 1 || inputDone[at(c + 1, m)] <= t);
  }
  bool forwardReady(int64_t p, int64_t c) const {
    int64_t m = nextF[c];
    return (stalled || inFlight[p] < limit) && m < M &&
           (c == 0 || forwardDone[at(c - 1, m)] <= t);
  }
  /// Rank p's pick at t: the kind and chunk, or false.
  bool pick(int64_t p, Kind &kind, int64_t &chunk) const;
  void start(int64_t p, Kind kind, int64_t c);

  Preference pref;
  int64_t pp, v, chunks, M, limit;
  /// Per chunk: its forward's, input gradient's and weight gradient's
  /// durations, kept positive so that time advances.
  std::vector<double> durations;
  std::vector<int64_t> stageOf;
  /// Rank p's chunks at [p v, p v + v), the later first.
  std::vector<int64_t> chunksOf;
  std::vector<int64_t> nextF, nextB, nextW, inFlight;
  /// End of each (chunk, micro-batch)'s forward and input gradient once
  /// started, else infinity: scratch of the thread, reused by its calls.
  std::vector<double> &forwardDone, &inputDone;
  std::vector<double> free;
  /// Per rank, the weights of the steps it has yet to start, and the most
  /// any rank's steps so far and the rest of its work come to (a bound of
  /// the end while the steps take their weights).
  std::vector<double> workLeft;
  double endBound = 0;
  /// Whether every step took its weight (no step was lengthened, no
  /// forward exceeded the limit).
  bool asWeighed = true;
  /// The ranks to look at, as bits, so that they come in rank order.
  std::vector<uint64_t> toLook;
  /// The ends of the steps running with their chunks, at most one per
  /// rank, a binary heap by end: the ends at one time are all popped before
  /// a rank picks, and only mark ranks, so their order does not matter
  /// (written out: std::priority_queue builds each pair on the stack and
  /// stalls reading it back).
  struct End {
    double time;
    int64_t chunk;
  };
  std::vector<End> ends;
  void pushEnd(double time, int64_t chunk);
  End popEnd();
  double t = 0;
  bool stalled = false;
  int64_t remaining;
  StageOrders &orders;
};
} // namespace

static std::vector<double> &scratch(int which) {
  static thread_local std::vector<double> arrays[2];
  return arrays[which];
}

ListScheduler::ListScheduler(const ScheduleShape &s, Preference pref,
                             StageOrders &orders)
    : pref(pref), pp(s.stages), v(s.virtualStages),
      chunks(s.stages * s.virtualStages), M(s.microBatches),
      limit(s.stages * s.virtualStages), forwardDone(scratch(0)),
      inputDone(scratch(1)), remaining(3 * chunks * M), orders(orders) {
  std::vector<StepWeights> weights =
      s.weights.empty() ? std::vector<StepWeights>(size_t(chunks)) : s.weights;
  double largest = 0;
  for (const StepWeights &w : weights)
    largest = std::max({largest, w.forward, w.inputGrad, w.weightGrad});
  double least = largest > 0 ? largest * 1e-9 : 1;
  for (const StepWeights &w : weights)
    for (double d : {w.forward, w.inputGrad, w.weightGrad}) {
      asWeighed = asWeighed && d >= least;
      durations.push_back(std::max(d, least));
    }
  for (int64_t c = 0; c < chunks; ++c)
    stageOf.push_back(getPhysicalStage(s.kind, pp, c));
  chunksOf.assign(size_t(chunks), 0);
  std::vector<int64_t> placed(size_t(pp), 0);
  for (int64_t c = chunks - 1; c >= 0; --c)
    chunksOf[size_t(stageOf[c] * v + placed[stageOf[c]]++)] = c;
  nextF.assign(size_t(chunks), 0);
  nextB.assign(size_t(chunks), 0);
  nextW.assign(size_t(chunks), 0);
  inFlight.assign(size_t(pp), 0);
  const double never = std::numeric_limits<double>::infinity();
  forwardDone.assign(size_t(chunks * M), never);
  inputDone.assign(size_t(chunks * M), never);
  free.assign(size_t(pp), 0);
  workLeft.assign(size_t(pp), 0);
  for (int64_t c = 0; c < chunks; ++c)
    for (int k = 0; k < 3; ++k)
      workLeft[size_t(stageOf[c])] += double(M) * durations[size_t(3 * c + k)];
  toLook.assign(size_t((pp + 63) / 64), 0);
  orders.resize(size_t(pp));
  for (std::vector<PipelineStep> &o : orders) {
    o.clear();
    o.reserve(size_t(3 * v * M));
  }
}

bool ListScheduler::pick(int64_t p, Kind &kind, int64_t &chunk) const {
  const int64_t *mine = &chunksOf[size_t(p * v)];
  auto firstInputGrad = [&] {
    for (int64_t i = 0; i < v; ++i) {
      int64_t c = mine[pref.earlierInputGrad ? v - 1 - i : i];
      if (inputGradReady(c)) {
        kind = InputGrad;
        chunk = c;
        return true;
      }
    }
    return false;
  };
  auto firstForward = [&] {
    for (int64_t i = 0; i < v; ++i)
      if (forwardReady(p, mine[i])) {
        kind = Forward;
        chunk = mine[i];
        return true;
      }
    return false;
  };
  if (pref.forwardFirst ? firstForward() || firstInputGrad()
                        : firstInputGrad() || firstForward())
    return true;
  for (int64_t i = 0; i < v; ++i)
    if (nextW[mine[i]] < nextB[mine[i]]) {
      kind = WeightGrad;
      chunk = mine[i];
      return true;
    }
  return false;
}

void ListScheduler::start(int64_t p, Kind kind, int64_t c) {
  double end = t + durations[size_t(3 * c + kind)];
  // Written in place (a step built aside stalls on being copied in).
  PipelineStep &step = orders[p].emplace_back();
  step.chunk = c;
  switch (kind) {
  case Forward:
    forwardDone[at(c, nextF[c])] = end;
    step.kind = StepKind::Forward;
    step.microbatch = nextF[c]++;
    ++inFlight[p];
    break;
  case InputGrad:
    inputDone[at(c, nextB[c])] = end;
    step.kind = StepKind::InputGrad;
    step.microbatch = nextB[c]++;
    break;
  case WeightGrad:
    step.kind = StepKind::WeightGrad;
    step.microbatch = nextW[c]++;
    --inFlight[p];
    break;
  }
  free[p] = end;
  workLeft[p] -= durations[size_t(3 * c + kind)];
  endBound = std::max(endBound, end + workLeft[p]);
  pushEnd(end, c);
  --remaining;
}

void ListScheduler::pushEnd(double time, int64_t chunk) {
  size_t i = ends.size();
  ends.emplace_back();
  for (; i > 0 && time < ends[(i - 1) / 2].time; i = (i - 1) / 2)
    ends[i] = ends[(i - 1) / 2];
  ends[i].time = time;
  ends[i].chunk = chunk;
}

ListScheduler::End ListScheduler::popEnd() {
  // Bottom-up: the hole at the top goes down to a leaf along the lesser
  // children (picked without a branch), then the last end rises from it.
  End top = ends.front(), last = ends.back();
  ends.pop_back();
  size_t n = ends.size(), i = 0;
  if (n == 0)
    return top;
  for (size_t child = 1; child + 1 < n; child = 2 * i + 1) {
    child += size_t(ends[child + 1].time < ends[child].time);
    ends[i] = ends[child];
    i = child;
  }
  if (2 * i + 1 < n) {
    ends[i] = ends[2 * i + 1];
    i = 2 * i + 1;
  }
  for (; i > 0 && last.time < ends[(i - 1) / 2].time; i = (i - 1) / 2)
    ends[i] = ends[(i - 1) / 2];
  ends[i] = last;
  return top;
}

ListOutcome ListScheduler::run(double abandonAfter) {
  for (int64_t p = 0; p < pp; ++p)
    lookAt(p);
  // A rank can pick something new only when a step of one of its chunks or
  // of their neighbours ends (what the steps wait for), or when the
  // schedule stalls: only those ranks are looked at, in rank order, which
  // picks what looking at every rank at every end would.
  while (remaining) {
    for (size_t word = 0; word < toLook.size(); ++word)
      for (uint64_t bits = toLook[word]; bits; bits &= bits - 1) {
        int64_t p = int64_t(word * 64) + llvm::countr_zero(bits);
        toLook[word] &= ~(uint64_t(1) << (p % 64));
        // A rank busy past t is looked at when its step ends.
        if (free[p] > t)
          continue;
        Kind kind;
        int64_t c;
        if (pick(p, kind, c)) {
          asWeighed = asWeighed && !stalled;
          stalled = false;
          start(p, kind, c);
        }
      }
    // (Sums of the weights in another order than the timeline's: a
    // margin far above their rounding.)
    if (asWeighed && endBound > abandonAfter * (1 + 1e-9))
      return {ListOutcome::Abandoned};
    if (!remaining)
      break;
    if (ends.empty()) {
      if (stalled)
        return {}; // cannot happen: an input gradient or forward is ready
      stalled = true;
      for (int64_t p = 0; p < pp; ++p)
        lookAt(p);
      continue;
    }
    t = ends.front().time;
    while (!ends.empty() && ends.front().time == t) {
      int64_t c = popEnd().chunk;
      for (int64_t n : {c - 1, c, c + 1})
        if (n >= 0 && n < chunks)
          lookAt(stageOf[n]);
    }
  }
  ListOutcome planned{ListOutcome::Planned, asWeighed, 0};
  for (double f : free)
    planned.end = std::max(planned.end, f);
  return planned;
}

ListOutcome mlir::stage::listSchedule(const ScheduleShape &s, Preference pref,
                                      StageOrders &orders,
                                      double abandonAfter) {
  return ListScheduler(s, pref, orders).run(abandonAfter);
}
