//===- PipelineSchedule.cpp - Orders of micro-batch steps -----------------===//

#include "Stage/Analysis/PipelineSchedule.h"

#include "Stage/Analysis/CostAnalysis.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

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

/// A rule of the list scheduler: which ready step a free rank runs first.
struct Preference {
  bool forwardFirst;     // a forward before an input gradient
  bool earlierInputGrad; // input gradients of the earlier chunk first
};

/// ZB-V (Qi et al. 2024, section 6): two chunks per rank in a V, planned as
/// the paper's heuristic does, by list scheduling with the steps' costs:
/// whenever a rank is free it runs a ready input gradient or forward (the
/// latter only while fewer than 1F1B's pp micro-batches, 2 pp chunk
/// activations, are in flight; the later chunk's first, as it brings a
/// micro-batch to its loss), in the order `pref` says, else a pending
/// weight gradient. Each chunk offers its earliest micro-batch. Should every
/// rank wait with work left, a forward may exceed the limit (it never has
/// in the tests). Deterministic in the weights.
static std::vector<std::vector<PipelineStep>>
listSchedule(const ScheduleShape &s, Preference pref) {
  int64_t pp = s.stages, v = s.virtualStages, M = s.microBatches;
  int64_t chunks = pp * v;
  const double never = std::numeric_limits<double>::infinity();
  // Durations, kept positive so that time advances.
  double largest = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    StepWeights w = weightsOf(s, c);
    largest = std::max({largest, w.forward, w.inputGrad, w.weightGrad});
  }
  double least = largest > 0 ? largest * 1e-9 : 1;
  auto duration = [&](StepKind k, int64_t c) {
    StepWeights w = weightsOf(s, c);
    double d = k == StepKind::Forward     ? w.forward
               : k == StepKind::InputGrad ? w.inputGrad
                                          : w.weightGrad;
    return std::max(d, least);
  };
  std::vector<std::vector<int64_t>> chunksOf(pp);
  for (int64_t c = chunks - 1; c >= 0; --c)
    chunksOf[getPhysicalStage(s.kind, pp, c)].push_back(c);
  std::vector<int64_t> nextF(chunks, 0), nextB(chunks, 0), nextW(chunks, 0);
  std::vector<double> forwardDone(chunks * M, never),
      inputDone(chunks * M, never);
  std::vector<double> free(pp, 0);
  std::vector<int64_t> inFlight(pp, 0);
  int64_t limit = pp * v, remaining = 3 * chunks * M;
  std::vector<std::vector<PipelineStep>> orders(pp);
  std::set<double> events{0.0};
  double t = 0;
  bool stalled = false;
  while (remaining) {
    for (int64_t p = 0; p < pp; ++p) {
      if (free[p] > t)
        continue;
      // chunksOf lists the later chunk first; the first candidate wins.
      std::optional<PipelineStep> pick;
      auto inputGrad = [&](int64_t c) {
        int64_t m = nextB[c];
        if (!pick && m < M && forwardDone[c * M + m] <= t &&
            (c == chunks - 1 || inputDone[(c + 1) * M + m] <= t))
          pick = PipelineStep{StepKind::InputGrad, c, m};
      };
      auto inputGrads = [&] {
        if (pref.earlierInputGrad)
          llvm::for_each(llvm::reverse(chunksOf[p]), inputGrad);
        else
          llvm::for_each(chunksOf[p], inputGrad);
      };
      auto forwards = [&] {
        for (int64_t c : chunksOf[p]) {
          int64_t m = nextF[c];
          if (!pick && (stalled || inFlight[p] < limit) && m < M &&
              (c == 0 || forwardDone[(c - 1) * M + m] <= t))
            pick = PipelineStep{StepKind::Forward, c, m};
        }
      };
      if (pref.forwardFirst) {
        forwards();
        inputGrads();
      } else {
        inputGrads();
        forwards();
      }
      for (int64_t c : chunksOf[p])
        if (!pick && nextW[c] < nextB[c])
          pick = PipelineStep{StepKind::WeightGrad, c, nextW[c]};
      if (!pick)
        continue;
      stalled = false;
      double end = t + duration(pick->kind, pick->chunk);
      int64_t c = pick->chunk, m = pick->microbatch;
      switch (pick->kind) {
      case StepKind::Forward:
        forwardDone[c * M + m] = end;
        ++nextF[c];
        ++inFlight[p];
        break;
      case StepKind::InputGrad:
        inputDone[c * M + m] = end;
        ++nextB[c];
        break;
      default:
        ++nextW[c];
        --inFlight[p];
        break;
      }
      orders[p].push_back(*pick);
      free[p] = end;
      events.insert(end);
      --remaining;
    }
    auto next = events.upper_bound(t);
    if (next == events.end()) {
      if (stalled)
        return {}; // cannot happen: an input gradient or forward is ready
      stalled = true;
      continue;
    }
    t = *next;
  }
  return orders;
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

static std::optional<Timeline>
replay(const ScheduleShape &s,
       const std::vector<std::vector<PipelineStep>> &orders,
       ArrayRef<StepWeights> times);

static std::vector<StepWeights> weightsOrUnit(const ScheduleShape &s) {
  std::vector<StepWeights> times;
  for (int64_t c = 0; c < s.stages * s.virtualStages; ++c)
    times.push_back(weightsOf(s, c));
  return times;
}

static double makespan(const Timeline &t) {
  double end = 0;
  for (const std::vector<TimedStep> &stage : t)
    for (const TimedStep &step : stage)
      end = std::max(end, step.end);
  return end;
}

/// ZB-V: of the list scheduler's rules, the one whose plan ends first with
/// the shape's weights (the first on a tie). No rule wins everywhere: input
/// gradients first suit equal steps, forwards first long input gradients.
static std::vector<std::vector<PipelineStep>>
zeroBubbleV(const ScheduleShape &s) {
  std::vector<std::vector<PipelineStep>> best;
  double bestEnd = 0;
  std::vector<StepWeights> times = weightsOrUnit(s);
  for (Preference pref : {Preference{false, true}, Preference{true, true},
                          Preference{true, false}}) {
    std::vector<std::vector<PipelineStep>> orders = listSchedule(s, pref);
    std::optional<Timeline> t = replay(s, orders, times);
    if (t && (best.empty() || makespan(*t) < bestEnd)) {
      bestEnd = makespan(*t);
      best = std::move(orders);
    }
  }
  return best;
}

static std::vector<std::vector<PipelineStep>>
computeStageSchedules(const ScheduleShape &s) {
  if (s.kind == ScheduleKind::zb_v)
    return zeroBubbleV(s);
  std::vector<std::vector<PipelineStep>> orders;
  for (int64_t p = 0; p < s.stages; ++p)
    orders.push_back(stageOrder(s, p));
  return orders;
}

std::vector<std::vector<PipelineStep>>
mlir::stage::getStageSchedules(const ScheduleShape &s) {
  // A search asks for the same shapes again (the memory walk and the
  // timeline of one plan, plans that differ in other degrees).
  std::string key = "schedule " + std::to_string(int(s.kind)) + " " +
                    std::to_string(s.stages) + " " +
                    std::to_string(s.virtualStages) + " " +
                    std::to_string(s.microBatches);
  for (const StepWeights &w : s.weights)
    key.append(reinterpret_cast<const char *>(&w), sizeof(w));
  return *memoizeByKey<std::vector<std::vector<PipelineStep>>>(
      key, [&] { return computeStageSchedules(s); });
}

std::vector<PipelineStep> mlir::stage::getStageSchedule(const ScheduleShape &s,
                                                        int64_t p) {
  if (s.kind == ScheduleKind::zb_v) {
    std::vector<std::vector<PipelineStep>> all = zeroBubbleV(s);
    return p < int64_t(all.size()) ? all[p] : std::vector<PipelineStep>();
  }
  return stageOrder(s, p);
}

std::optional<Timeline> mlir::stage::simulateTimeline(const ScheduleShape &s,
                                                      double forward,
                                                      double inputGrad,
                                                      double weightGrad) {
  // A chunk is 1/v of a stage, except a DualPipe copy's: a whole one.
  double v = isMirrored(s.kind) ? 1.0 : double(s.virtualStages);
  std::vector<StepWeights> times(size_t(s.stages * s.virtualStages),
                                 {forward / v, inputGrad / v, weightGrad / v});
  return simulateTimeline(s, times);
}

std::optional<Timeline>
mlir::stage::simulateTimeline(const ScheduleShape &s,
                              ArrayRef<StepWeights> times) {
  if (int64_t(times.size()) != s.stages * s.virtualStages)
    return std::nullopt;
  return replay(s, getStageSchedules(s), times);
}

static std::optional<Timeline>
replay(const ScheduleShape &s,
       const std::vector<std::vector<PipelineStep>> &orders,
       ArrayRef<StepWeights> times) {
  int64_t pp = s.stages;
  if (int64_t(orders.size()) != pp)
    return std::nullopt;
  // End times of the finished forwards and input gradients (a whole
  // backward counts as its input gradient) by chunk and micro-batch, -1
  // while not done.
  int64_t chunks = 0, microbatches = 0;
  size_t remaining = 0;
  for (auto &o : orders) {
    remaining += o.size();
    for (const PipelineStep &st : o) {
      chunks = std::max(chunks, st.chunk + 1);
      microbatches = std::max(microbatches, st.microbatch + 1);
    }
  }
  std::vector<double> forwards(size_t(chunks * microbatches), -1.0),
      inputs(forwards.size(), -1.0);
  auto slot = [&](int64_t c, int64_t m) {
    return size_t(c * microbatches + m);
  };
  std::vector<size_t> next(pp, 0);
  std::vector<double> free(pp, 0.0);
  Timeline timeline(pp);
  for (int64_t p = 0; p < pp; ++p)
    timeline[p].reserve(orders[p].size());
  // When step `st` of stage p can start (its inputs' end), if they are done.
  auto readyAt = [&](const PipelineStep &st) -> std::optional<double> {
    double ready = 0;
    auto need = [&](const std::vector<double> &ends, int64_t c) {
      if (c < 0 || c >= chunks || ends[slot(c, st.microbatch)] < 0)
        return false;
      ready = std::max(ready, ends[slot(c, st.microbatch)]);
      return true;
    };
    ChunkChain chain = getChunkChain(s, st.chunk);
    bool ok = st.kind == StepKind::Forward
                  ? st.chunk == chain.first || need(forwards, st.chunk - 1)
              : st.kind == StepKind::WeightGrad
                  ? need(inputs, st.chunk)
                  : need(forwards, st.chunk) &&
                        (st.chunk == chain.last || need(inputs, st.chunk + 1));
    if (!ok)
      return std::nullopt;
    return ready;
  };
  auto length = [&](const PipelineStep &st) {
    const StepWeights &w = times[st.chunk];
    switch (st.kind) {
    case StepKind::Forward:
      return w.forward;
    case StepKind::InputGrad:
      return w.inputGrad;
    case StepKind::WeightGrad:
      return w.weightGrad;
    case StepKind::Backward:
      break;
    }
    return w.inputGrad + w.weightGrad;
  };
  while (remaining) {
    bool progress = false;
    for (int64_t p = 0; p < pp; ++p) {
      if (next[p] == orders[p].size())
        continue;
      // A step, or a pair of steps that start together.
      size_t count =
          orders[p][next[p]].pairedWithNext && next[p] + 1 < orders[p].size()
              ? 2
              : 1;
      double start = free[p];
      bool ok = true;
      for (size_t k = 0; k < count && ok; ++k) {
        std::optional<double> r = readyAt(orders[p][next[p] + k]);
        ok = r.has_value();
        if (ok)
          start = std::max(start, *r);
      }
      if (!ok)
        continue;
      for (size_t k = 0; k < count; ++k) {
        const PipelineStep &st = orders[p][next[p]];
        double end = start + length(st);
        if (st.kind == StepKind::Forward)
          forwards[slot(st.chunk, st.microbatch)] = end;
        else if (st.kind != StepKind::WeightGrad)
          inputs[slot(st.chunk, st.microbatch)] = end;
        timeline[p].push_back({st, start, end});
        start = end;
        ++next[p];
        --remaining;
      }
      free[p] = start;
      progress = true;
    }
    if (!progress)
      return std::nullopt;
  }
  return timeline;
}

std::optional<double> mlir::stage::simulateSchedule(const ScheduleShape &s,
                                                    double forward,
                                                    double inputGrad,
                                                    double weightGrad) {
  std::optional<Timeline> t =
      simulateTimeline(s, forward, inputGrad, weightGrad);
  if (!t)
    return std::nullopt;
  return makespan(*t);
}

double mlir::stage::getBubbleFraction(const ScheduleShape &s) {
  if (!splitsBackward(s.kind))
    return double(s.stages - 1) / double(s.virtualStages * s.microBatches);
  std::optional<Timeline> t = simulateTimeline(s, weightsOrUnit(s));
  if (!t)
    return 0;
  double busiest = 0;
  for (const std::vector<TimedStep> &stage : *t) {
    double busy = 0;
    for (const TimedStep &step : stage)
      busy += step.end - step.start;
    busiest = std::max(busiest, busy);
  }
  return busiest > 0 ? (makespan(*t) - busiest) / busiest : 0;
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
