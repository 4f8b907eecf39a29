//===- ListSchedule.cpp - ZB-V's orders by list scheduling ----------------===//
//
// A search plans ZB-V for every plan it evaluates (three rules each), up to
// hundreds of thousands of steps: the state is a few numbers per rank and
// per chunk (steps started and ended, not their times), a rank's pick is
// one lookup in a table of the rule with few branches (what a free rank may
// run is unpredictable), and a step is logged as one number; only the
// orders of the rule kept are built.
//
//===----------------------------------------------------------------------===//

#include "ListSchedule.h"

#include "llvm/ADT/bit.h"

#include <array>
#include <limits>

using namespace mlir;
using namespace mlir::stage;

namespace {
/// The rule as a table: per set of ready steps (bit 2 kind + i for kind
/// `kind` of the rank's chunk i: 0 the later, 1 the earlier), the one to
/// run (2 kind + i), or -1.
using RuleTable = std::array<int8_t, 64>;
RuleTable getRuleTable(Preference pref);

class ListScheduler {
public:
  ListScheduler(const ScheduleShape &s, Preference pref, StartedSteps &log);
  /// Continues from where another rule's schedule parted from this one's.
  void resume(const ListPoint &from);
  /// Records in `at` where this schedule first parts from `other`'s.
  void watch(Preference other, ListPoint *at) {
    watched.push_back({getRuleTable(other), at});
  }
  ListOutcome run(double abandonAfter);

private:
  /// Rank p's chunks: the later one, 2 pp - 1 - p (index 0), and the
  /// earlier, p (index 1).
  int64_t chunkOf(int64_t p, int which) const {
    return which ? p : 2 * pp - 1 - p;
  }
  /// Where step `code`'s count of ends is kept: chunk -1's and 2 pp's
  /// come first and last.
  static size_t endedAt(int64_t code) { return size_t(code + CodesPerChunk); }
  /// Rank p, free at t, starts what the rule picks of its ready steps.
  void look(int64_t p);
  void start(int64_t p, int choice);
  void pushEnd(double time, int64_t code);
  void save(ListPoint &at, int ready) const;
  /// The state a later rule resumes from, between a scheduler and a
  /// ListPoint (the same names in both).
  template <typename From, typename To>
  static void copyState(const From &from, To &to);

  int64_t pp, chunks, M, limit;
  RuleTable rule;
  /// Other rules, and where this schedule first parts from theirs.
  SmallVector<std::pair<RuleTable, ListPoint *>, 2> watched;
  /// Per chunk and kind (at its code, as the log keeps it; the
  /// fourth, a whole backward, is never run), the step's duration, kept
  /// positive so that time advances, and the next micro-batch to run.
  std::vector<double> durations;
  std::vector<int64_t> next;
  /// Per rank, when it is free (rank pp, which stands for no rank, never
  /// is), its forwards in flight, and the weights of the steps it has yet
  /// to start.
  std::vector<double> free, workLeft;
  std::vector<int64_t> inFlight;
  /// Per step code, the ranks that may pick something new when
  /// one ends: its own, now free, and the one whose steps wait for it (a
  /// forward's next chunk's forward, an input gradient's previous chunk's
  /// input gradient; a weight gradient's, none: rank pp).
  std::vector<std::array<int64_t, 2>> watchers;
  /// Per chunk and kind (`endedAt`), the steps ended by t: a chunk's steps
  /// run on one rank in micro-batch order, so micro-batch m's has ended
  /// once more than m have. Every forward of chunk -1 and input gradient
  /// of chunk 2 pp has.
  std::vector<int64_t> ended;
  /// The most any rank's steps so far and the rest of its work come to (a
  /// bound of the end while the steps take their weights).
  double endBound = 0;
  /// Whether every step took its weight (no step was lengthened, no
  /// forward exceeded the limit).
  bool asWeighed = true;
  bool stalled = false;
  /// The ends of the running steps with their codes, sorted in a ring: a
  /// new end lands near the latest, so few move to place it (three or four
  /// in a search's) and the earliest leaves at once. At most one per rank.
  using End = ListPoint::End;
  std::vector<End> ends;
  size_t head = 0, count = 0, mask;
  /// The steps ending at t, in the order they end.
  SmallVector<int64_t, 8> leaving;
  double t = 0;
  int64_t remaining;
  StartedSteps &log;
  uint32_t *logged;
};
} // namespace

namespace {
RuleTable getRuleTable(Preference pref) {
  // Input gradients (the later chunk's first, or the earlier's) and
  // forwards (the later chunk's first) in the order the rule says, then
  // weight gradients (the later chunk's first).
  int firstInput = pref.earlierInputGrad ? 1 : 0;
  std::array<int, 2> inputs = {2 * InputGradCode + firstInput,
                               2 * InputGradCode + 1 - firstInput};
  std::array<int, 2> forwards = {2 * ForwardCode, 2 * ForwardCode + 1};
  std::array<int, 2> first = pref.forwardFirst ? forwards : inputs;
  std::array<int, 2> second = pref.forwardFirst ? inputs : forwards;
  std::array<int, 6> order = {first[0],           first[1],
                              second[0],          second[1],
                              2 * WeightGradCode, 2 * WeightGradCode + 1};
  RuleTable rule;
  for (int ready = 0; ready < 64; ++ready) {
    rule[ready] = -1;
    for (int o : order)
      if (ready >> o & 1) {
        rule[ready] = int8_t(o);
        break;
      }
  }
  return rule;
}
} // namespace

bool mlir::stage::picksAlike(Preference a, Preference b, const ListPoint &at) {
  return getRuleTable(a)[size_t(at.ready)] == getRuleTable(b)[size_t(at.ready)];
}

ListScheduler::ListScheduler(const ScheduleShape &s, Preference pref,
                             StartedSteps &log)
    : pp(s.stages), chunks(2 * s.stages), M(s.microBatches), limit(chunks),
      rule(getRuleTable(pref)), mask(llvm::bit_ceil(size_t(pp)) - 1),
      remaining(3 * chunks * M), log(log) {
  std::vector<StepWeights> weights =
      s.weights.empty() ? std::vector<StepWeights>(size_t(chunks)) : s.weights;
  double largest = 0;
  for (const StepWeights &w : weights)
    largest = std::max({largest, w.forward, w.inputGrad, w.weightGrad});
  double least = largest > 0 ? largest * 1e-9 : 1;
  for (const StepWeights &w : weights) {
    for (double d : {w.forward, w.inputGrad, w.weightGrad}) {
      asWeighed = asWeighed && d >= least;
      durations.push_back(std::max(d, least));
    }
    durations.push_back(0);
  }
  next.assign(size_t(CodesPerChunk * chunks), 0);
  free.assign(size_t(pp + 1), 0);
  free[pp] = std::numeric_limits<double>::infinity();
  workLeft.assign(size_t(pp), 0);
  inFlight.assign(size_t(pp), 0);
  auto rankOf = [&](int64_t c) {
    return c < 0 || c >= chunks ? pp : getPhysicalStage(s.kind, pp, c);
  };
  for (int64_t c = 0; c < chunks; ++c) {
    for (int k = 0; k < 3; ++k)
      workLeft[size_t(rankOf(c))] +=
          double(M) * durations[size_t(CodesPerChunk * c + k)];
    watchers.push_back({rankOf(c), rankOf(c + 1)});
    watchers.push_back({rankOf(c), rankOf(c - 1)});
    watchers.push_back({rankOf(c), pp});
    watchers.push_back({pp, pp});
  }
  ended.assign(endedAt(CodesPerChunk * (chunks + 1)), 0);
  ended[endedAt(CodesPerChunk * -1 + ForwardCode)] = M;
  ended[endedAt(CodesPerChunk * chunks + InputGradCode)] = M;
  ends.assign(mask + 1, End{0, 0});
  log.resize(size_t(remaining));
  logged = log.data();
}

void ListScheduler::look(int64_t p) {
  // What is ready, computed whole (no branch on each test): a forward while
  // fewer than the limit are in flight, once the previous chunk's forward
  // of its micro-batch ended; an input gradient once its forward and the
  // next chunk's input gradient ended; a weight gradient once its input
  // gradient started (on this rank: ended).
  bool room = stalled || inFlight[p] < limit;
  int ready = 0;
  for (int i = 0; i < 2; ++i) {
    int64_t c = chunkOf(p, i);
    const int64_t *n = &next[size_t(CodesPerChunk * c)];
    const int64_t *e = &ended[endedAt(CodesPerChunk * c)];
    int64_t f = n[ForwardCode], b = n[InputGradCode];
    ready |= int(room & (f < M) & (f < e[ForwardCode - CodesPerChunk]))
             << (2 * ForwardCode + i);
    ready |= int((b < M) & (b < e[ForwardCode]) &
                 (b < e[InputGradCode + CodesPerChunk]))
             << (2 * InputGradCode + i);
    ready |= int(n[WeightGradCode] < b) << (2 * WeightGradCode + i);
  }
  int choice = rule[size_t(ready)];
  if (choice < 0)
    return;
  for (auto &[other, at] : watched)
    if (!at->reached && other[size_t(ready)] != choice)
      save(*at, ready);
  asWeighed = asWeighed && !stalled;
  stalled = false;
  start(p, choice);
}

void ListScheduler::start(int64_t p, int choice) {
  int kind = choice / 2;
  int64_t c = chunkOf(p, choice % 2);
  size_t step = size_t(CodesPerChunk * c + kind);
  double duration = durations[step], end = t + duration;
  ++next[step];
  inFlight[p] += int64_t(kind == ForwardCode) - int64_t(kind == WeightGradCode);
  *logged++ = uint32_t(step);
  free[p] = end;
  workLeft[p] -= duration;
  endBound = std::max(endBound, end + workLeft[p]);
  pushEnd(end, int64_t(step));
  --remaining;
}

template <typename From, typename To>
void ListScheduler::copyState(const From &from, To &to) {
  to.next = from.next;
  to.inFlight = from.inFlight;
  to.free = from.free;
  to.workLeft = from.workLeft;
  to.ended = from.ended;
  to.ends = from.ends;
  to.head = from.head;
  to.count = from.count;
  to.t = from.t;
  to.endBound = from.endBound;
  to.asWeighed = from.asWeighed;
  to.stalled = from.stalled;
  to.remaining = from.remaining;
}

void ListScheduler::save(ListPoint &at, int ready) const {
  at.reached = true;
  at.ready = ready;
  copyState(*this, at);
  at.started.assign(log.data(), logged);
}

void ListScheduler::resume(const ListPoint &from) {
  copyState(from, *this);
  logged = std::copy(from.started.begin(), from.started.end(), log.data());
}

void ListScheduler::pushEnd(double time, int64_t code) {
  size_t i = count++;
  for (; i > 0 && time < ends[(head + i - 1) & mask].time; --i)
    ends[(head + i) & mask] = ends[(head + i - 1) & mask];
  ends[(head + i) & mask] = {time, code};
}

ListOutcome ListScheduler::run(double abandonAfter) {
  // At the start, or where another rule's schedule parted from this one's
  // (in the middle of its ends at t): every free rank, in rank order, as
  // the stalled look does.
  for (int64_t p = 0; p < pp; ++p)
    if (free[p] <= t)
      look(p);
  // A rank can pick something new only when its own step or one its steps
  // wait for ends, or when the schedule stalls: only those ranks are looked
  // at, once every step ending at t is counted. A rank's pick reads only
  // what its own picks and the ends change, so the ranks at one time may
  // be looked at in any order; only when stalled, where the first pick
  // lifts the limit for the rest, is the order kept (rank order).
  while (true) {
    // (Sums of the weights in another order than the timeline's: a
    // margin far above their rounding.)
    if (asWeighed && endBound > abandonAfter * (1 + 1e-9))
      return {ListOutcome::Abandoned};
    if (!remaining)
      break;
    if (!count) {
      if (stalled)
        return {}; // cannot happen: an input gradient or forward is ready
      stalled = true;
      for (int64_t p = 0; p < pp; ++p)
        if (free[p] <= t)
          look(p);
      continue;
    }
    t = ends[head].time;
    leaving.clear();
    do {
      int64_t code = ends[head].code;
      ++ended[endedAt(code)];
      leaving.push_back(code);
      head = (head + 1) & mask;
      --count;
    } while (count && ends[head].time == t);
    for (int64_t code : leaving)
      for (int64_t q : watchers[size_t(code)])
        if (free[q] <= t)
          look(q);
  }
  ListOutcome planned{ListOutcome::Planned, asWeighed, 0};
  for (int64_t p = 0; p < pp; ++p)
    planned.end = std::max(planned.end, free[p]);
  return planned;
}

ListOutcome mlir::stage::listSchedule(
    const ScheduleShape &s, Preference pref, StartedSteps &started,
    double abandonAfter, const ListPoint *from,
    ArrayRef<std::pair<Preference, ListPoint *>> partings) {
  if (s.kind != ScheduleKind::zb_v || !checkSchedule(s).empty())
    return {};
  ListScheduler scheduler(s, pref, started);
  if (from)
    scheduler.resume(*from);
  for (auto [other, at] : partings)
    scheduler.watch(other, at);
  return scheduler.run(abandonAfter);
}

StageOrders mlir::stage::getListOrders(const ScheduleShape &s,
                                       const StartedSteps &started) {
  int64_t chunks = 2 * s.stages;
  std::vector<int64_t> stageOf;
  for (int64_t c = 0; c < chunks; ++c)
    stageOf.push_back(getPhysicalStage(s.kind, s.stages, c));
  // Each rank runs three steps of each of its two chunks per micro-batch.
  StageOrders orders(size_t(s.stages));
  for (std::vector<PipelineStep> &o : orders)
    o.reserve(size_t(6 * s.microBatches));
  std::vector<int64_t> next(size_t(CodesPerChunk * chunks), 0);
  for (uint32_t step : started) {
    int64_t c = step / CodesPerChunk;
    PipelineStep &added = orders[size_t(stageOf[c])].emplace_back();
    added.kind = getStepKind(step);
    added.chunk = c;
    added.microbatch = next[step]++;
  }
  return orders;
}
