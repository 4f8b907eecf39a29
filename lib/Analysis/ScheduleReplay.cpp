//===- ScheduleReplay.cpp - Timelines of a schedule's orders --------------===//
//
// A replay compiled once per orders: each step's inputs and its end are
// slots, found from its chunk, kind and micro-batch without a branch, and
// the steps come in an order in which every input is there.
//
//===----------------------------------------------------------------------===//

#include "ScheduleReplay.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::stage;

/// Per step code, its steps' time.
static std::vector<double> getLengths(const ReplayProgram &program,
                                      ArrayRef<StepWeights> times) {
  std::vector<double> lengths;
  lengths.reserve(size_t(CodesPerChunk * program.chunks));
  for (const StepWeights &w : times.take_front(size_t(program.chunks)))
    lengths.insert(lengths.end(), {w.forward, w.inputGrad, w.weightGrad,
                                   w.inputGrad + w.weightGrad});
  return lengths;
}

static ScheduleSpan getSpanOf(ArrayRef<double> free, ArrayRef<double> busy) {
  ScheduleSpan span;
  for (auto [f, b] : llvm::zip(free, busy)) {
    span.end = std::max(span.end, f);
    span.busiest = std::max(span.busiest, b);
  }
  return span;
}

/// A program with no steps yet: each step code's slots, with a
/// forward's end kept at 2 + c M + m and an input gradient's (or whole
/// backward's) at 2 + (chunks + c) M + m. `runs`, if given, is false for a
/// (chunk, kind) whose steps would wait for a chunk that does not exist
/// (they never run).
static ReplayProgram startProgram(const ScheduleShape &s, int64_t chunks,
                                  int64_t microbatches,
                                  std::vector<bool> *runs = nullptr) {
  ReplayProgram program;
  program.stages = s.stages;
  program.chunks = chunks;
  program.slotCount = size_t(2 + 2 * chunks * microbatches);
  uint32_t M = uint32_t(microbatches);
  auto forward = [&](int64_t c) { return uint32_t(2 + c * M); };
  auto input = [&](int64_t c) { return uint32_t(2 + (chunks + c) * M); };
  for (int64_t c = 0; c < chunks; ++c) {
    ChunkChain chain = getChunkChain(s, c);
    uint32_t stage = uint32_t(getPhysicalStage(s.kind, s.stages, c));
    bool forwardRuns = c == chain.first || c - 1 >= 0;
    bool backwardRuns = c == chain.last || c + 1 < chunks;
    uint32_t previous = c == chain.first || !forwardRuns ? 0 : forward(c - 1);
    uint32_t next = c == chain.last || !backwardRuns ? 0 : input(c + 1);
    auto some = [](uint32_t base) { return base ? 1u : 0u; };
    using Slots = ReplayProgram::Slots;
    Slots backward{stage, {forward(c), next, input(c)}, {1, some(next), 1}};
    program.slots.push_back(
        Slots{stage, {previous, 0, forward(c)}, {some(previous), 0, 1}});
    program.slots.push_back(backward);
    program.slots.push_back(Slots{stage, {input(c), 0, 1}, {1, 0, 0}});
    program.slots.push_back(backward);
    if (runs)
      runs->insert(runs->end(),
                   {forwardRuns, backwardRuns, true, backwardRuns});
  }
  return program;
}

std::optional<ReplayProgram>
mlir::stage::compileReplay(const ScheduleShape &s, const StageOrders &orders,
                           ArrayRef<StepWeights> times, ScheduleSpan &span) {
  int64_t pp = int64_t(orders.size()), chunks = 0, microbatches = 0;
  size_t total = 0;
  for (const std::vector<PipelineStep> &order : orders) {
    total += order.size();
    for (const PipelineStep &st : order) {
      chunks = std::max(chunks, int64_t(st.chunk) + 1);
      microbatches = std::max(microbatches, int64_t(st.microbatch) + 1);
    }
  }
  if (pp != s.stages || int64_t(times.size()) < chunks)
    return std::nullopt;
  std::vector<bool> runs;
  ReplayProgram program = startProgram(s, chunks, microbatches, &runs);
  program.steps.reserve(total);
  // Each stage runs as far as its steps' inputs are done (an end of -1 is
  // not), and a stage waiting is looked at again when a neighbouring chunk
  // finishes a step (what it may wait for). The ends are the replay's with
  // `times`, in the order runReplay takes.
  std::vector<double> lengths = getLengths(program, times);
  std::vector<double> ends(program.slotCount, -1.0);
  ends[0] = 0;
  std::vector<double> free(pp, 0.0), busy(pp, 0.0);
  std::vector<int64_t> stageOf(chunks, -1);
  for (int64_t p = 0; p < pp; ++p)
    for (const PipelineStep &st : orders[p])
      stageOf[st.chunk] = p;
  std::vector<size_t> next(pp, 0);
  std::vector<uint32_t> pending;
  for (int64_t p = pp - 1; p >= 0; --p)
    pending.push_back(uint32_t(p));
  std::vector<char> queued(pp, 1);
  auto wake = [&](int64_t c) {
    if (c < 0 || c >= chunks)
      return;
    int64_t q = stageOf[c];
    if (q >= 0 && !queued[q]) {
      queued[q] = 1;
      pending.push_back(uint32_t(q));
    }
  };
  auto slotOf = [&](const PipelineStep &st, int i) {
    const ReplayProgram::Slots &at = program.slots[getStepCode(st)];
    return at.base[i] + uint32_t(st.microbatch) * at.stride[i];
  };
  while (!pending.empty()) {
    uint32_t p = pending.back();
    pending.pop_back();
    queued[p] = 0;
    const std::vector<PipelineStep> &order = orders[p];
    while (next[p] < order.size()) {
      size_t count =
          order[next[p]].pairedWithNext && next[p] + 1 < order.size() ? 2 : 1;
      bool ready = true;
      double start = free[p];
      for (size_t k = 0; k < count && ready; ++k) {
        const PipelineStep &st = order[next[p] + k];
        size_t code = getStepCode(st);
        if (!runs[code] || program.slots[code].stage != p)
          return std::nullopt;
        double first = ends[slotOf(st, 0)], second = ends[slotOf(st, 1)];
        ready = first >= 0 && second >= 0;
        start = std::max(start, std::max(first, second));
      }
      if (!ready)
        break;
      if (count == 2)
        program.pairs.push_back(uint32_t(program.steps.size()));
      for (size_t k = 0; k < count; ++k) {
        const PipelineStep &st = order[next[p]++];
        uint32_t code = getStepCode(st);
        program.steps.push_back({code, uint32_t(st.microbatch)});
        double end = start + lengths[code];
        ends[slotOf(st, 2)] = end;
        busy[p] += end - start;
        start = end;
        if (st.isForward())
          wake(st.chunk + 1);
        else if (st.kind != StepKind::WeightGrad)
          wake(st.chunk - 1);
      }
      free[p] = start;
    }
  }
  span = getSpanOf(free, busy);
  if (program.steps.size() != total)
    return std::nullopt;
  return program;
}

ReplayProgram mlir::stage::compileListReplay(const ScheduleShape &s,
                                             const StartedSteps &started) {
  // The list schedule's codes are the program's; each chunk's steps of one
  // kind come from micro-batch 0 up.
  int64_t chunks = s.stages * s.virtualStages;
  ReplayProgram program = startProgram(s, chunks, s.microBatches);
  program.steps.resize(started.size());
  std::vector<uint32_t> next(size_t(CodesPerChunk * chunks), 0);
  for (auto [code, step] : llvm::zip(started, program.steps))
    step = {code, next[code]++};
  return program;
}

std::optional<ScheduleSpan> mlir::stage::runReplay(const ReplayProgram &program,
                                                   ArrayRef<StepWeights> times,
                                                   const StageOrders *orders,
                                                   Timeline *record) {
  if (int64_t(times.size()) < program.chunks)
    return std::nullopt;
  std::vector<double> lengths = getLengths(program, times);
  // Every slot but the first is written before it is read: the thread's
  // scratch, not cleared.
  static thread_local std::vector<double> ends;
  if (ends.size() < program.slotCount)
    ends.resize(program.slotCount);
  ends[0] = 0;
  size_t pp = size_t(program.stages);
  std::vector<double> free(pp, 0.0), busy(pp, 0.0);
  std::vector<size_t> next;
  if (record) {
    record->assign(pp, {});
    for (size_t p = 0; p < pp; ++p)
      (*record)[p].reserve((*orders)[p].size());
    next.assign(pp, 0);
  }
  const ReplayProgram::Step *steps = program.steps.data();
  const ReplayProgram::Slots *slots = program.slots.data();
  auto slot = [&](const ReplayProgram::Step &st, int i) {
    const ReplayProgram::Slots &at = slots[st.code];
    return at.base[i] + st.microbatch * at.stride[i];
  };
  const uint32_t *pair = program.pairs.data(),
                 *pairsEnd = pair + program.pairs.size();
  for (size_t i = 0, n = program.steps.size(); i < n;) {
    size_t count = pair != pairsEnd && *pair == i ? 2 : 1;
    pair += count - 1;
    uint32_t p = slots[steps[i].code].stage;
    // (The maxima in any order: exact.)
    double start = free[p];
    for (size_t k = 0; k < count; ++k)
      start = std::max(start, std::max(ends[slot(steps[i + k], 0)],
                                       ends[slot(steps[i + k], 1)]));
    for (size_t k = 0; k < count; ++k, ++i) {
      double end = start + lengths[steps[i].code];
      ends[slot(steps[i], 2)] = end;
      if (record)
        (*record)[p].push_back({(*orders)[p][next[p]++], start, end});
      busy[p] += end - start;
      start = end;
    }
    free[p] = start;
  }
  return getSpanOf(free, busy);
}
