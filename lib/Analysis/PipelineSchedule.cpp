//===- PipelineSchedule.cpp - Orders of micro-batch steps -----------------===//

#include "Stage/Analysis/PipelineSchedule.h"

#include "Stage/Analysis/CostAnalysis.h"

#include "ListSchedule.h"
#include "ScheduleReplay.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <numeric>

using namespace mlir;
using namespace mlir::stage;

std::string mlir::stage::checkSchedule(const ScheduleShape &s) {
  if (s.stages < 1 || s.virtualStages < 1 || s.microBatches < 1)
    return "stages, virtual stages and micro-batches must be positive";
  // (A step holds its chunk and micro-batch in 32 bits.)
  const int64_t limit = std::numeric_limits<int32_t>::max();
  if (s.stages > limit || s.virtualStages > limit ||
      s.stages * s.virtualStages > limit || s.microBatches > limit)
    return "a schedule of " + std::to_string(s.stages) + " stages, " +
           std::to_string(s.virtualStages) + " virtual stages and " +
           std::to_string(s.microBatches) +
           " micro-batches is beyond any pipeline's (at most 2^31 - 1 "
           "chunks and micro-batches)";
  if (s.kind == ScheduleKind::interleaved && s.microBatches % s.stages != 0)
    return "the interleaved schedule needs a micro-batch count that is a "
           "multiple of pp: M = " +
           std::to_string(s.microBatches) + " is not a multiple of pp = " +
           std::to_string(s.stages);
  if (isVShaped(s.kind) && s.virtualStages != 2)
    return "the " + stringifyScheduleKind(s.kind).str() +
           " schedule runs 2 virtual stages per rank";
  if (s.kind != ScheduleKind::interleaved && !isVShaped(s.kind) &&
      s.virtualStages != 1)
    return "only the interleaved schedule has virtual stages";
  if (isMirrored(s.kind) && s.stages % 2 != 0)
    return "the dualpipe schedule needs an even pp (each rank's mirror, "
           "pp - 1 - r, is another rank): pp = " +
           std::to_string(s.stages);
  if (isMirrored(s.kind) && s.microBatches % 2 != 0)
    return "the dualpipe schedule feeds half the micro-batches from each end "
           "and needs an even count: M = " +
           std::to_string(s.microBatches);
  if ((s.kind == ScheduleKind::dualpipe_v || isMirrored(s.kind)) &&
      s.microBatches < 2 * s.stages)
    return "the " + stringifyScheduleKind(s.kind).str() +
           " schedule needs at least 2 pp micro-batches: M = " +
           std::to_string(s.microBatches) +
           " is below 2 pp = " + std::to_string(2 * s.stages);
  if (!s.weights.empty() &&
      int64_t(s.weights.size()) != s.stages * s.virtualStages)
    return "step weights for " + std::to_string(s.weights.size()) +
           " chunks, not " + std::to_string(s.stages * s.virtualStages);
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
  return {forward ? StepKind::Forward : StepKind::Backward, local * pp + p, mb};
}

/// ZB-H1 (Qi et al. 2024, section 3.1): 1F1B's warm-up and alternation with
/// the backward split, stage p's weight gradients lagging its input
/// gradients by p steps, so that they fill the cool-down where 1F1B idles;
/// at most pp micro-batches are in flight on any stage, 1F1B's peak.
static std::vector<PipelineStep> zeroBubbleH1(const ScheduleShape &s,
                                              int64_t p) {
  std::vector<PipelineStep> steps;
  int64_t M = s.microBatches, pp = s.stages;
  int64_t warmup = std::min(pp - p - 1, M);
  int64_t f = 0, b = 0, w = 0;
  auto backward = [&] {
    steps.push_back({StepKind::InputGrad, p, b++});
    if (b - w > p)
      steps.push_back({StepKind::WeightGrad, p, w++});
  };
  for (; f < warmup; ++f)
    steps.push_back({StepKind::Forward, p, f});
  for (; f < M; ++f) {
    steps.push_back({StepKind::Forward, p, f});
    backward();
  }
  while (b < M)
    backward();
  while (w < M)
    steps.push_back({StepKind::WeightGrad, p, w++});
  return steps;
}

/// One rank of DeepSeek's DualPipe schedules (the DualPipe repository's
/// eight phases): its two chunks (phase 0, the one whose arm the rank sits
/// early in, and phase 1), the first micro-batch each runs, the ranks along
/// an arm's first half (`half`), the rank's distance from its end of it
/// (`h`), and the micro-batches each chunk runs.
struct DualPipeRank {
  int64_t chunk[2], firstBatch[2];
  int64_t half, h, batches;
};

/// The phases: forwards of phase 0, then of both; phase-1 input gradients
/// with their weight gradients right after, and forwards; the main phase of
/// overlapped pairs, a forward of one phase with the whole backward of the
/// other; the drain, where the middle of the rank's backwards switches to
/// zero-bubble (weight gradients deferred to a queue that fills the end).
static std::vector<PipelineStep> dualPipePhases(const DualPipeRank &r) {
  int64_t half = r.half, h = r.h;
  int64_t forwards[2] = {r.firstBatch[0], r.firstBatch[1]};
  int64_t backwards[2] = {r.firstBatch[0], r.firstBatch[1]};
  std::vector<PipelineStep> steps;
  std::vector<PipelineStep> deferred; // weight gradients, oldest first
  auto forward = [&](int phase) {
    steps.push_back({StepKind::Forward, r.chunk[phase], forwards[phase]++});
  };
  auto backward = [&](int phase, bool zeroBubble) {
    int64_t m = backwards[phase]++;
    if (!zeroBubble) {
      steps.push_back({StepKind::Backward, r.chunk[phase], m});
      return;
    }
    steps.push_back({StepKind::InputGrad, r.chunk[phase], m});
    deferred.push_back({StepKind::WeightGrad, r.chunk[phase], m});
  };
  auto weight = [&] {
    steps.push_back(deferred.front());
    deferred.erase(deferred.begin());
  };
  auto pair = [&](int forwardPhase) {
    forward(forwardPhase);
    steps.back().pairedWithNext = true;
    backward(1 - forwardPhase, false);
  };
  for (int64_t i = 0; i < 2 * (half - h - 1); ++i)
    forward(0);
  for (int64_t i = 0; i <= h; ++i) {
    forward(0);
    forward(1);
  }
  for (int64_t i = 0; i < half - h - 1; ++i) {
    backward(1, true);
    weight();
    forward(1);
  }
  for (int64_t i = 0; i < r.batches - 2 * half + h + 1; ++i) {
    if (i == 0 && h == half - 1) {
      // The rank at the turn's first pair would wait on itself (DualPipeV)
      // or on the other middle rank's (DualPipe): run apart, as the
      // repository does.
      forward(0);
      backward(1, false);
    } else {
      pair(0);
    }
    pair(1);
  }
  for (int64_t i = 0; i < half - h - 1; ++i) {
    backward(1, false);
    pair(1);
  }
  bool zeroBubble = false;
  for (int64_t i = 0, n = h + 1; i < n; ++i) {
    if (i == n / 2 && h % 2 == 1)
      zeroBubble = true;
    backward(1, zeroBubble);
    if (i == n / 2 && h % 2 == 0)
      zeroBubble = true;
    backward(0, zeroBubble);
  }
  for (int64_t i = 0; i < half - h - 1; ++i) {
    weight();
    backward(0, true);
  }
  while (!deferred.empty())
    weight();
  return steps;
}

/// DualPipeV (DeepSeek, the DualPipe repository's V-shaped schedule cut
/// from DualPipe): rank r's chunks r (first arm, phase 0) and 2 pp - 1 - r
/// (second arm), each running all M micro-batches. Needs M >= 2 pp.
static std::vector<PipelineStep> dualPipeV(const ScheduleShape &s, int64_t r) {
  int64_t pp = s.stages;
  return dualPipePhases({{r, 2 * pp - 1 - r}, {0, 0}, pp, r, s.microBatches});
}

/// DualPipe (DeepSeek-V3 technical report, section 3.2.1; the DualPipe
/// repository's schedule): rank r holds stage r of the copy fed from rank 0
/// (chunk r, micro-batches [0, M/2)) and stage pp - 1 - r of the copy fed
/// from the last rank (chunk 2 pp - 1 - r, [M/2, M)); phase 0 is the first
/// copy on ranks r < pp / 2, the mirrored one beyond, and h counts from the
/// rank's nearer end. Needs an even pp and M, M >= 2 pp.
static std::vector<PipelineStep> dualPipe(const ScheduleShape &s, int64_t r) {
  int64_t pp = s.stages, M = s.microBatches;
  DualPipeRank rank{
      {r, 2 * pp - 1 - r}, {0, M / 2}, pp / 2, std::min(r, pp - 1 - r), M / 2};
  if (r >= pp / 2) {
    std::swap(rank.chunk[0], rank.chunk[1]);
    std::swap(rank.firstBatch[0], rank.firstBatch[1]);
  }
  return dualPipePhases(rank);
}

static StepWeights weightsOf(const ScheduleShape &s, int64_t chunk) {
  if (s.weights.empty())
    return StepWeights();
  return s.weights[chunk];
}

static std::vector<PipelineStep> stageOrder(const ScheduleShape &s, int64_t p) {
  std::vector<PipelineStep> steps;
  int64_t M = s.microBatches, pp = s.stages;
  switch (s.kind) {
  case ScheduleKind::gpipe:
    for (int64_t m = 0; m < M; ++m)
      steps.push_back({StepKind::Forward, p, m});
    for (int64_t m = 0; m < M; ++m)
      steps.push_back({StepKind::Backward, p, m});
    return steps;
  case ScheduleKind::one_f_one_b: {
    int64_t warmup = std::min(pp - p - 1, M);
    int64_t f = 0, b = 0;
    for (; f < warmup; ++f)
      steps.push_back({StepKind::Forward, p, f});
    for (; f < M; ++f, ++b) {
      steps.push_back({StepKind::Forward, p, f});
      steps.push_back({StepKind::Backward, p, b});
    }
    for (; b < M; ++b)
      steps.push_back({StepKind::Backward, p, b});
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
  case ScheduleKind::zb_h1:
    return zeroBubbleH1(s, p);
  case ScheduleKind::dualpipe_v:
    return dualPipeV(s, p);
  case ScheduleKind::dualpipe:
    return dualPipe(s, p);
  case ScheduleKind::zb_v:
    break;
  }
  return steps;
}

namespace {
/// A schedule's orders, with ZB-V's replay compiled from its list
/// schedule (other orders' are compiled when first replayed: a search asks
/// for many only for their memory).
struct PlannedOrders {
  StageOrders orders;
  std::optional<ReplayProgram> replay;
};
} // namespace

/// What `compute()` derives from a schedule's shape (`key` names it and
/// every value read), kept for the process while a SymbolicCache is alive:
/// a search meets the same shapes in many compiled steps (the same pp, v
/// and M; for ZB-V the same step times, where plans differ only in what
/// the steps do not show, such as ZeRO 0 and 1). Up to `budget` bytes of
/// them as `bytes` counts; past it, and without a cache, memoizeByKey's.
template <typename T, typename Compute, typename Bytes>
static std::shared_ptr<const T> keepForShapes(const std::string &key,
                                              size_t budget, Compute compute,
                                              Bytes bytes) {
  if (!SymbolicCache::active())
    return memoizeByKey<T>(key, compute);
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const void>> kept;
  static size_t keptBytes = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = kept.find(key);
    if (it != kept.end())
      return std::static_pointer_cast<const T>(it->second);
  }
  auto value = std::make_shared<const T>(compute());
  size_t size = bytes(*value);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (keptBytes + size <= budget) {
      keptBytes += size;
      return std::static_pointer_cast<const T>(
          kept.try_emplace(key, std::move(value)).first->second);
    }
  }
  return memoizeByKey<T>(key, [&] { return *value; });
}

static std::string getOrdersKey(const ScheduleShape &s);
static PlannedOrders plan(const ScheduleShape &s, const StartedSteps &started);
static std::optional<ScheduleSpan> replay(const ScheduleShape &s,
                                          ArrayRef<StepWeights> times,
                                          Timeline *record = nullptr);

static std::vector<StepWeights> weightsOrUnit(const ScheduleShape &s) {
  std::vector<StepWeights> times;
  for (int64_t c = 0; c < s.stages * s.virtualStages; ++c)
    times.push_back(weightsOf(s, c));
  return times;
}

/// ZB-V: of the list scheduler's rules, the one whose plan ends first with
/// the shape's weights (the first on a tie). No rule wins everywhere: input
/// gradients first suit equal steps, forwards first long input gradients.
/// A rule's end is the scheduler's own where its timeline is the replay's;
/// a rule sure to end after the best so far is abandoned. A later rule
/// resumes from where it parts from the schedule it follows (the first
/// rule's, or the second rule's if it parts from the first rule's where the
/// second does, the same way), and is not planned at all if it never does:
/// its plan would be that one's, no better. The steps the kept rule started,
/// none if no rule planned.
static StartedSteps planZeroBubbleV(const ScheduleShape &s) {
  // The rules' steps are logged into the thread's buffers, which keep
  // their memory from plan to plan; only the best one's orders are built.
  static thread_local StartedSteps candidate, best;
  static thread_local ListPoint parting[3];
  const Preference rules[] = {{false, true}, {true, true}, {true, false}};
  for (ListPoint &point : parting)
    point.reached = false;
  bool found = false;
  double bestEnd = 0;
  for (size_t i = 0; i < 3; ++i) {
    if (i > 0 && !parting[i].reached)
      continue;
    // The later rules whose schedule is this one's so far.
    SmallVector<std::pair<Preference, ListPoint *>, 2> partings;
    if (i == 0) {
      partings = {{rules[1], &parting[1]}, {rules[2], &parting[2]}};
    } else if (i == 1 && parting[2].reached &&
               parting[2].started.size() == parting[1].started.size() &&
               picksAlike(rules[1], rules[2], parting[1])) {
      parting[2].reached = false;
      partings = {{rules[2], &parting[2]}};
    }
    ListOutcome planned =
        listSchedule(s, rules[i], candidate,
                     found ? bestEnd : std::numeric_limits<double>::infinity(),
                     i > 0 ? &parting[i] : nullptr, partings);
    if (planned.status != ListOutcome::Planned)
      continue;
    double end = planned.end;
    if (!planned.timed) {
      PlannedOrders orders = plan(s, candidate);
      std::optional<ScheduleSpan> t =
          runReplay(*orders.replay, weightsOrUnit(s), &orders.orders);
      if (!t)
        continue;
      end = t->end;
    }
    if (!found || end < bestEnd) {
      bestEnd = end;
      found = true;
      std::swap(best, candidate);
    }
  }
  return found ? best : StartedSteps();
}

/// ZB-V's orders: the kept rule's steps are kept for the process (4 bytes
/// a step), its orders and replay built from them.
static PlannedOrders zeroBubbleV(const ScheduleShape &s) {
  std::shared_ptr<const StartedSteps> started = keepForShapes<StartedSteps>(
      "zb-v steps " + getOrdersKey(s), size_t(1) << 26,
      [&] { return planZeroBubbleV(s); },
      [](const StartedSteps &steps) {
        return steps.size() * sizeof(uint32_t);
      });
  return started->empty() ? PlannedOrders() : plan(s, *started);
}

static PlannedOrders computeStageSchedules(const ScheduleShape &s) {
  if (s.kind == ScheduleKind::zb_v)
    return zeroBubbleV(s);
  PlannedOrders planned;
  for (int64_t p = 0; p < s.stages; ++p)
    planned.orders.push_back(stageOrder(s, p));
  return planned;
}

bool mlir::stage::orderDependsOnWeights(const ScheduleShape &s) {
  return s.kind == ScheduleKind::zb_v;
}

/// What a shape's orders depend on.
static std::string getOrdersKey(const ScheduleShape &s) {
  std::string key =
      std::to_string(int(s.kind)) + " " + std::to_string(s.stages) + " " +
      std::to_string(s.virtualStages) + " " + std::to_string(s.microBatches);
  if (orderDependsOnWeights(s))
    for (const StepWeights &w : s.weights)
      key.append(reinterpret_cast<const char *>(&w), sizeof(w));
  return key;
}

static std::shared_ptr<const PlannedOrders>
getPlannedOrders(const ScheduleShape &s) {
  // A search asks for the same shapes again (the memory walk and the
  // timeline of one plan, plans that differ in other degrees).
  return memoizeByKey<PlannedOrders>("schedule " + getOrdersKey(s),
                                     [&] { return computeStageSchedules(s); });
}

std::shared_ptr<const StageOrders>
mlir::stage::getStageSchedules(const ScheduleShape &s) {
  std::shared_ptr<const PlannedOrders> planned = getPlannedOrders(s);
  return {planned, &planned->orders};
}

/// `order`'s moments (StageMoments): each distinct one at its first step,
/// less those an earlier kept one covers (running the same chunk in the
/// same direction, for `running`).
static StageMoments getMoments(ArrayRef<PipelineStep> order) {
  StageMoments out;
  for (const PipelineStep &st : order)
    if (!llvm::is_contained(out.chunks, st.chunk))
      out.chunks.push_back(st.chunk);
  size_t n = out.chunks.size();
  // The counts now: per chunk whole, then per chunk awaiting weights.
  SmallVector<int64_t> now(2 * n, 0);
  // The distinct moments, their counts from `moment * 2n` on in `counts`,
  // found by a hash of the counts that each step updates (a step changes
  // one or two counts; deep pipelines repeat a few moments thousands of
  // times).
  auto factor = [](size_t i) { return 0x9e3779b97f4a7c15ull * (2 * i + 1); };
  uint64_t hash = 0;
  llvm::DenseMap<uint64_t, SmallVector<uint32_t, 1>> byHash;
  std::vector<StageMoment> all;
  std::vector<int64_t> counts;
  auto countsOf = [&](size_t i) {
    return ArrayRef<int64_t>(counts).slice(i * 2 * n, 2 * n);
  };
  for (const PipelineStep &st : order) {
    size_t c = llvm::find(out.chunks, st.chunk) - out.chunks.begin();
    auto add = [&](size_t slot, int64_t by) {
      now[slot] += by;
      hash += uint64_t(by) * factor(slot);
    };
    size_t whole = c, awaiting = n + c;
    // A forward's activations are there while it runs; a backward's until
    // it ends.
    if (st.isForward())
      add(whole, 1);
    // (The top bit clear: DenseMap reserves two keys.)
    uint64_t key = (hash ^ (factor(2 * n + c) << st.isForward())) >> 1;
    SmallVector<uint32_t, 1> &bucket = byHash[key];
    if (llvm::none_of(bucket, [&](uint32_t i) {
          return all[i].position == c &&
                 all[i].step.isForward() == st.isForward() &&
                 countsOf(i) == ArrayRef<int64_t>(now);
        })) {
      bucket.push_back(uint32_t(all.size()));
      all.push_back({st, uint32_t(c), 0}); // (countsAt: once kept)
      counts.insert(counts.end(), now.begin(), now.end());
    }
    if (st.kind == StepKind::InputGrad) {
      add(whole, -1);
      add(awaiting, 1);
    } else if (st.kind == StepKind::WeightGrad) {
      add(awaiting, -1);
    } else if (st.kind == StepKind::Backward) {
      add(whole, -1);
    }
  }
  // A moment covers another only if its counts sum to at least as much: a
  // test that spares most comparisons of the counts.
  std::vector<int64_t> sums;
  for (size_t i = 0; i < all.size(); ++i) {
    ArrayRef<int64_t> k = countsOf(i);
    sums.push_back(std::accumulate(k.begin(), k.end(), int64_t(0)));
  }
  auto covers = [&](size_t a, size_t b) {
    for (auto [x, y] : llvm::zip(countsOf(a), countsOf(b)))
      if (x < y)
        return false;
    return true;
  };
  // The kept moments' counts, once each (a moment may be in both lists).
  std::vector<uint32_t> keptAt(all.size(), ~0u);
  auto keep = [&](std::vector<StageMoment> &kept, auto sameClass) {
    SmallVector<size_t> keptHere;
    for (size_t i = 0; i < all.size(); ++i) {
      if (llvm::any_of(keptHere, [&](size_t k) {
            return sums[k] >= sums[i] && sameClass(all[k], all[i]) &&
                   covers(k, i);
          }))
        continue;
      keptHere.push_back(i);
      if (keptAt[i] == ~0u) {
        keptAt[i] = uint32_t(out.counts.size());
        ArrayRef<int64_t> k = countsOf(i);
        out.counts.insert(out.counts.end(), k.begin(), k.end());
      }
      kept.push_back({all[i].step, all[i].position, keptAt[i]});
    }
  };
  keep(out.running, [](const StageMoment &a, const StageMoment &b) {
    return a.position == b.position && a.step.isForward() == b.step.isForward();
  });
  keep(out.kept, [](const StageMoment &, const StageMoment &) { return true; });
  return out;
}

std::shared_ptr<const std::vector<StageMoments>>
mlir::stage::getScheduleMoments(const ScheduleShape &s) {
  std::string key = "schedule moments " + getOrdersKey(s);
  auto compute = [&] {
    std::vector<StageMoments> moments;
    std::shared_ptr<const StageOrders> orders = getStageSchedules(s);
    for (const std::vector<PipelineStep> &order : *orders)
      moments.push_back(getMoments(order));
    return moments;
  };
  if (orderDependsOnWeights(s))
    return memoizeByKey<std::vector<StageMoments>>(key, compute);
  // Small: at most a few hundred moments per stage (M for GPipe).
  return keepForShapes<std::vector<StageMoments>>(
      key, std::numeric_limits<size_t>::max(), compute,
      [](const std::vector<StageMoments> &) { return size_t(0); });
}

std::vector<PipelineStep> mlir::stage::getStageSchedule(const ScheduleShape &s,
                                                        int64_t p) {
  if (s.kind == ScheduleKind::zb_v) {
    std::shared_ptr<const StageOrders> all = getStageSchedules(s);
    return p < int64_t(all->size()) ? (*all)[p] : std::vector<PipelineStep>();
  }
  return stageOrder(s, p);
}

/// Every chunk's step times when the stages are equal.
static std::vector<StepWeights> equalStageTimes(const ScheduleShape &s,
                                                double forward,
                                                double inputGrad,
                                                double weightGrad) {
  // A chunk is 1/v of a stage, except a DualPipe copy's: a whole one.
  double v = isMirrored(s.kind) ? 1.0 : double(s.virtualStages);
  return std::vector<StepWeights>(size_t(s.stages * s.virtualStages),
                                  {forward / v, inputGrad / v, weightGrad / v});
}

std::optional<Timeline> mlir::stage::simulateTimeline(const ScheduleShape &s,
                                                      double forward,
                                                      double inputGrad,
                                                      double weightGrad) {
  return simulateTimeline(s,
                          equalStageTimes(s, forward, inputGrad, weightGrad));
}

std::optional<Timeline>
mlir::stage::simulateTimeline(const ScheduleShape &s,
                              ArrayRef<StepWeights> times) {
  if (int64_t(times.size()) != s.stages * s.virtualStages)
    return std::nullopt;
  Timeline timeline;
  if (!replay(s, times, &timeline))
    return std::nullopt;
  return timeline;
}

std::optional<ScheduleSpan>
mlir::stage::simulateSpan(const ScheduleShape &s, ArrayRef<StepWeights> times) {
  if (int64_t(times.size()) != s.stages * s.virtualStages)
    return std::nullopt;
  return replay(s, times);
}

ScheduleSpan mlir::stage::getSpan(const Timeline &timeline) {
  // The replay's sums, in its order.
  ScheduleSpan span;
  for (const std::vector<TimedStep> &stage : timeline) {
    double busy = 0;
    for (const TimedStep &ts : stage)
      busy += ts.end - ts.start;
    if (!stage.empty())
      span.end = std::max(span.end, stage.back().end);
    span.busiest = std::max(span.busiest, busy);
  }
  return span;
}

static PlannedOrders plan(const ScheduleShape &s, const StartedSteps &started) {
  PlannedOrders planned;
  planned.orders = getListOrders(s, started);
  planned.replay = compileListReplay(s, started);
  return planned;
}

static std::optional<ScheduleSpan>
replay(const ScheduleShape &s, ArrayRef<StepWeights> times, Timeline *record) {
  if (orderDependsOnWeights(s)) {
    std::shared_ptr<const PlannedOrders> planned = getPlannedOrders(s);
    if (planned->replay)
      return runReplay(*planned->replay, times, &planned->orders, record);
  }
  // Compiled by the first replay, whose span that gives; the orders are
  // planned only to compile it or to record a timeline.
  std::optional<ScheduleSpan> first;
  auto compile = [&] {
    ScheduleSpan span;
    std::optional<ReplayProgram> compiled =
        compileReplay(s, getPlannedOrders(s)->orders, times, span);
    if (compiled)
      first = span;
    return compiled;
  };
  auto bytes = [](const std::optional<ReplayProgram> &p) {
    return p ? p->steps.size() * sizeof(ReplayProgram::Step) +
                   p->pairs.size() * sizeof(uint32_t) +
                   p->slots.size() * sizeof(ReplayProgram::Slots)
             : 0;
  };
  // 8 bytes a step: a search's few hundred fixed orders of pp, v and M fit.
  std::string key = "replay " + getOrdersKey(s);
  std::shared_ptr<const std::optional<ReplayProgram>> program =
      orderDependsOnWeights(s)
          ? memoizeByKey<std::optional<ReplayProgram>>(key, compile)
          : keepForShapes<std::optional<ReplayProgram>>(key, size_t(1) << 28,
                                                        compile, bytes);
  if (!*program)
    return std::nullopt;
  if (first && !record)
    return first;
  if (!record)
    return runReplay(**program, times);
  return runReplay(**program, times, &getPlannedOrders(s)->orders, record);
}

std::optional<double> mlir::stage::simulateSchedule(const ScheduleShape &s,
                                                    double forward,
                                                    double inputGrad,
                                                    double weightGrad) {
  std::optional<ScheduleSpan> span =
      simulateSpan(s, equalStageTimes(s, forward, inputGrad, weightGrad));
  if (!span)
    return std::nullopt;
  return span->end;
}

double mlir::stage::getBubbleFraction(const ScheduleShape &s) {
  if (!splitsBackward(s.kind))
    return double(s.stages - 1) / double(s.virtualStages * s.microBatches);
  std::optional<ScheduleSpan> span = simulateSpan(s, weightsOrUnit(s));
  if (!span)
    return 0;
  return span->busiest > 0 ? (span->end - span->busiest) / span->busiest : 0;
}

ChunkChain mlir::stage::getChunkChain(const ScheduleShape &s, int64_t chunk) {
  int64_t chunks = s.stages * s.virtualStages;
  if (!isMirrored(s.kind))
    return {0, chunks - 1, 0, s.microBatches};
  if (chunk < s.stages)
    return {0, s.stages - 1, 0, s.microBatches / 2};
  return {s.stages, chunks - 1, s.microBatches / 2, s.microBatches};
}

double mlir::stage::getPeakInFlight(const ScheduleShape &s, int64_t p) {
  int64_t inFlight = 0, peak = 0;
  for (const PipelineStep &st : getStageSchedule(s, p)) {
    if (st.kind == StepKind::Forward)
      peak = std::max(peak, ++inFlight);
    else if (st.kind == StepKind::Backward || st.kind == StepKind::WeightGrad)
      --inFlight;
  }
  // A mirrored copy's chunk is a whole stage.
  return isMirrored(s.kind) ? double(peak)
                            : double(peak) / double(s.virtualStages);
}
