//===- StageReport.cpp - Per-rank-class part of the report ----------------===//

#include "StageReport.h"

#include "ReportSections.h"

#include "Stage/Analysis/CommAnalysis.h"
#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Analysis/MemoryAnalysis.h"
#include "Stage/Analysis/RankClasses.h"
#include "Stage/Analysis/StepTimes.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

namespace {

/// The FLOPs rows of a set of phase costs: each phase, the backward's
/// attention kernel recomputation, the total.
void addFlopRows(SectionBuilder &f, const PhaseCosts &pc,
                 const sym::Expr &scale) {
  sym::Expr all, contraction;
  for (Phase p : kTrainingPhases) {
    f.add(getPhaseName(p), std::string(getPhaseName(p)) + " FLOPs", "FLOP",
          scale * pc.of(p).flops());
    if (p == Phase::Backward)
      f.add(kAttentionKernelRecomputeKey, kAttentionKernelRecomputeLabel,
            "FLOP", scale * pc.attentionKernelRecomputeFlops);
    all += pc.of(p).flops();
    contraction += pc.of(p).contractionFlops;
  }
  f.add("total", "total FLOPs", "FLOP", scale * all);
  f.add("contraction", "of which in contractions", "FLOP", scale * contraction);
}

/// A rank class's memory section: its model states, what it keeps and its
/// working sets, and its peak; for `numbersOnly` (a search's estimate) the
/// states and the peak.
FailureOr<Section> memorySection(func::FuncOp fn, const sym::Bindings &b,
                                 const StageMemory &mem, bool numbersOnly) {
  // A search reads by key the values the memory model evaluated (once per
  // twin class), for every rank class of every plan: no title or labels.
  // The report shows them and the expressions.
  SectionBuilder m(fn, b, "memory",
                   numbersOnly ? "" : "Memory per rank (bytes)");
  auto states = [&](const char *key, const char *label, const char *unit,
                    const sym::Expr &e, const sym::Rational &value) {
    if (numbersOnly)
      m.addValue(key, "", unit, value);
    else
      m.add(key, label, unit, e);
  };
  const StageMemory::Values &v = mem.values;
  const StageExprs &exprs = *mem.exprs;
  states("weights", "weights", "B", exprs.weights, v.weights);
  states("gradients", "gradients", "B", exprs.gradients, v.gradients);
  states("master_weights", "fp32 master weights", "B", exprs.masterWeights,
         v.masterWeights);
  states("optimizer_moments", "optimizer moments", "B", exprs.optimizerMoments,
         v.optimizerMoments);
  states("model_states", "model states", "B", exprs.modelStates, v.modelStates);
  if (numbersOnly) {
    m.addValue("peak", "", "B", mem.peak);
    m.addValue("parameters", "", "", v.parameters);
    return m.take();
  }
  sym::Expr perMicrobatch;
  sym::Rational perLayer(0), fwdTransient(0), bwdTransient(0);
  for (const sym::Expr &kept : exprs.keptPerMicrobatch)
    perMicrobatch += kept;
  for (const ChunkMemory &c : mem.chunks) {
    if (perLayer < c.keptPerLayer)
      perLayer = c.keptPerLayer;
    if (fwdTransient < c.forwardTransient)
      fwdTransient = c.forwardTransient;
    if (bwdTransient < c.backwardTransient)
      bwdTransient = c.backwardTransient;
  }
  m.add("activations_per_microbatch", "activations kept per micro-batch", "B",
        perMicrobatch);
  m.addValue("activations_per_layer", "activations kept per layer", "B",
             perLayer);
  m.addValue("in_flight", "micro-batches in flight at most", "",
             sym::Rational(mem.peakInFlight));
  m.addValue("peak_activations", "kept activations at most", "B",
             mem.peakActivations);
  m.addValue("forward_transient", "largest forward working set", "B",
             fwdTransient);
  m.addValue("backward_transient", "largest backward working set", "B",
             bwdTransient);
  m.addValue("optimizer_transient", "optimizer-phase working set", "B",
             mem.optimizerTransient);
  m.addValue("peak", "peak", "B", mem.peak);
  m.add("parameters", "parameters held", "", exprs.parameters);
  return m.take();
}

/// A rank class's report as far as its memory: the class, its layers and
/// the memory section.
FailureOr<StageReport> memoryReport(func::FuncOp fn, const sym::Bindings &b,
                                    const RankClass &cls,
                                    const StageMemory &mem, bool numbersOnly) {
  StageReport sr;
  sr.stage = cls.stage;
  // A search reads the memory section's numbers only.
  if (!numbersOnly) {
    sr.layers = layerRanges(cls);
    sr.peakAt = mem.peakAt;
  }
  FailureOr<Section> m = memorySection(fn, b, mem, numbersOnly);
  if (failed(m))
    return failure();
  sr.sections.push_back(std::move(*m));
  return sr;
}

/// A rank class's FLOPs, communication and traffic sections (the full
/// report's), added to `sr`; its FLOPs and traffic over every rank of its
/// stage are added to the job's.
LogicalResult addCostSections(func::FuncOp fn, const sym::Bindings &b,
                              ArrayRef<Operation *> chunkOps,
                              const sym::Expr &ranksPerStage, StageReport &sr,
                              PhaseCosts &jobCosts,
                              std::vector<CommVolume> &jobTraffic) {
  SectionBuilder f(fn, b, "flops", "FLOPs per rank and iteration");
  PhaseCosts total = sumPhaseCosts(chunkOps);
  addFlopRows(f, total, sym::Expr(1));
  for (unsigned i = 0; i < kNumPhases; ++i)
    jobCosts.phases[i] += total.phases[i].scaled(ranksPerStage);
  jobCosts.attentionKernelRecomputeFlops +=
      ranksPerStage * total.attentionKernelRecomputeFlops;

  SectionBuilder c(fn, b, "communication",
                   "Communication per rank and iteration (message bytes)");
  SectionBuilder s(fn, b, "traffic",
                   "Bytes sent per rank and iteration (ring algorithms)");
  for (const CommVolume &v : getCommVolumes(chunkOps)) {
    c.add(commKey(v), commLabel(v), "B", v.messageBytes);
    if (v.kind == "recv")
      continue;
    s.add(commKey(v), commLabel(v), "B", v.sentBytes);
    auto it = llvm::find_if(jobTraffic, [&](const CommVolume &o) {
      return o.kind == v.kind && o.axes == v.axes;
    });
    if (it == jobTraffic.end()) {
      jobTraffic.push_back(v);
      jobTraffic.back().sentBytes = sym::Expr();
      it = std::prev(jobTraffic.end());
    }
    it->sentBytes += ranksPerStage * v.sentBytes;
  }
  for (SectionBuilder *sb : {&f, &c, &s}) {
    FailureOr<Section> sec = sb->take();
    if (failed(sec))
      return failure();
    sr.sections.push_back(std::move(*sec));
  }
  return success();
}

} // namespace

/// One function: every section of every stage's report reads the same walk
/// of the stage's chunks and the same schedule.
LogicalResult mlir::stage::report::buildStageReports(
    func::FuncOp fn, const sym::Bindings &b, const DeviceModel &device,
    const ReportRequest &request, Report &report) {
  std::shared_ptr<const StepStructure> structure = getStepStructure(fn);
  const StepStructure &step = *structure;
  FailureOr<std::vector<StageMemory>> memory = analyzeMemory(fn, b, device);
  if (failed(memory))
    return failure();
  bool numbersOnly = request.numbersOnly;
  // A plan a search drops for its memory needs no time.
  if (numbersOnly && request.timeOnlyWithin > 0 &&
      llvm::any_of(*memory, [&](const StageMemory &m) {
        return double(m.peak.ceilToInt64().value_or(INT64_MAX)) >
               request.timeOnlyWithin;
      })) {
    for (auto [cls, mem] : llvm::zip(step.classes, *memory)) {
      FailureOr<StageReport> sr = memoryReport(fn, b, cls, mem, numbersOnly);
      if (failed(sr))
        return failure();
      report.stages.push_back(std::move(*sr));
    }
    return success();
  }
  sym::Result<int64_t> M = step.microBatches.evaluate(b);
  if (!M)
    return fn.emitError("micro-batch count: ") << M.error();
  const JobReport &job = *report.job;
  // The ranks that run one stage's program: the product of the other axes
  // (those of degree 1 split nothing and appear in no local shape).
  sym::Expr ranksPerStage(1);
  for (const auto &[axis, d] : job.axes)
    if (axis != "pp" && d > 1)
      ranksPerStage *= sym::Expr::symbol(axis);

  // Per virtual stage (chunk), the roofline time of one micro-batch's
  // forward and backward step; per rank class, the optimizer phase.
  int64_t chunks = step.stages * step.virtualStages;
  std::vector<double> forwardStep(chunks, 0.0), backwardStep(chunks, 0.0);
  double slowestOptimizer = 0, slowestReductions = 0;
  OverlapKinds overlap = getOverlap(fn->getParentOfType<ModuleOp>());
  PhaseCosts jobCosts;
  std::vector<CommVolume> jobTraffic;
  sym::Result<sym::Rational> ranks = ranksPerStage.evaluateRational(b);
  if (!ranks)
    return fn.emitError("ranks per stage: ") << ranks.error();
  for (auto [cls, mem] : llvm::zip(step.classes, *memory)) {
    FailureOr<StageReport> started = memoryReport(fn, b, cls, mem, numbersOnly);
    if (failed(started))
      return failure();
    StageReport &sr = *started;

    SmallVector<Operation *> chunkOps(cls.chunks.begin(), cls.chunks.end());
    if (numbersOnly) {
      // Only the job's forward FLOPs (for MFU), numerically.
      for (Operation *chunk : chunkOps) {
        FailureOr<double> flops = getPhaseFlops(chunk, Phase::Forward, b);
        if (failed(flops))
          return failure();
        report.jobForwardFlops += ranks->toDouble() * *flops;
      }
    } else if (failed(addCostSections(fn, b, chunkOps, ranksPerStage, sr,
                                      jobCosts, jobTraffic))) {
      return failure();
    }

    PhaseTimes stageTimes;
    double hidden = 0, exposedReductions = 0;
    for (auto [op, id] : llvm::zip(chunkOps, cls.chunkIds)) {
      FailureOr<PhaseTimes> t = phaseTimes(op, b, device);
      if (failed(t))
        return failure();
      // The micro-batches this chunk runs (half of them under DualPipe).
      MicrobatchesOp loop = getMicrobatches(op);
      sym::Result<int64_t> runs =
          loop ? loop.getCount().getValue().evaluate(b) : M;
      if (!runs)
        return fn.emitError("micro-batch count: ") << runs.error();
      // A step's time: its compute and communication, where ZeRO-3's
      // gathers and reduce-scatters hide behind the compute under overlap
      // fsdp (docs/Overlap.md). The reductions after the loop are not a
      // forward step's.
      auto step = [&](std::initializer_list<Phase> phases, double minus) {
        double compute = 0, comm = -minus, zero3 = 0, exposed = 0;
        for (Phase p : phases) {
          compute += t->compute[unsigned(p)];
          comm += t->comm[unsigned(p)];
          zero3 += t->zero3[unsigned(p)];
          exposed += t->zero3Exposed[unsigned(p)];
        }
        if (overlap.fsdp) {
          double behind = std::min(std::max(0.0, zero3 - exposed), compute);
          comm -= behind;
          hidden += behind;
        }
        return (compute + comm) / double(*runs);
      };
      forwardStep[id] = step({Phase::Forward}, t->reductions);
      backwardStep[id] = step({Phase::Backward, Phase::Recompute}, 0);
      // Under overlap grad the last micro-batch's backward hides them.
      double behind =
          overlap.grad ? std::min(t->reductions, backwardStep[id]) : 0;
      hidden += behind;
      exposedReductions += t->reductions - behind;
      for (unsigned i = 0; i < kNumPhases; ++i) {
        stageTimes.compute[i] += t->compute[i];
        stageTimes.comm[i] += t->comm[i];
      }
    }
    slowestReductions = std::max(slowestReductions, exposedReductions);
    slowestOptimizer = std::max(slowestOptimizer, stageTimes.of(Phase::Optimizer));
    if (!numbersOnly) {
      SectionBuilder tm(fn, b, "time",
                        "Time per rank and iteration (" + device.displayName() +
                            ")");
      double computeAll = 0, commAll = 0;
      for (unsigned i = 0; i < kNumPhases; ++i) {
        computeAll += stageTimes.compute[i];
        commAll += stageTimes.comm[i];
      }
      tm.addSeconds("compute", "compute", computeAll);
      tm.addSeconds("communication", "communication", commAll);
      tm.addSeconds("hidden", "of which overlapped with compute", hidden);
      FailureOr<Section> sec = tm.take();
      if (failed(sec))
        return failure();
      sr.sections.push_back(std::move(*sec));
    }
    report.stages.push_back(std::move(sr));
  }

  // The pipeline: every stage runs its schedule with its own chunks' step
  // times; the slowest optimizer phase follows. A schedule that splits the
  // backward splits each chunk's as its ops do (BackwardSplit.h).
  FailureOr<ScheduleShape> shape = getScheduleShape(fn, step, b, device);
  if (failed(shape))
    return failure();
  bool split = splitsBackward(step.kind);
  std::vector<StepWeights> times;
  for (int64_t c = 0; c < chunks; ++c)
    times.push_back({forwardStep[c], backwardStep[c], 0});
  if (split) {
    FailureOr<std::vector<StepWeights>> parts =
        getStepTimes(fn, step, b, device);
    if (failed(parts))
      return failure();
    for (auto [t, part] : llvm::zip(times, *parts)) {
      double whole = part.inputGrad + part.weightGrad;
      double w = whole > 0 ? part.weightGrad / whole : 0;
      t.weightGrad = t.inputGrad * w;
      t.inputGrad -= t.weightGrad;
    }
  }
  PipelineReport p;
  p.schedule = stringifyScheduleKind(step.kind).str();
  p.stages = step.stages;
  p.virtualStages = step.virtualStages;
  p.microBatches = *M;
  // Every step's times, for the report's chart (not for a search: deep
  // pipelines run hundreds of thousands of steps).
  std::optional<Timeline> timeline;
  std::optional<ScheduleSpan> span;
  if (numbersOnly) {
    span = simulateSpan(*shape, times);
  } else if ((timeline = simulateTimeline(*shape, times))) {
    span = getSpan(*timeline);
  }
  if (!span)
    return fn.emitError("the schedule's orders wait on each other");
  double end = span->end, busiest = span->busiest;
  if (timeline)
    for (const std::vector<TimedStep> &stage : *timeline) {
      std::vector<TimelineStep> &steps = p.timeline.emplace_back();
      steps.reserve(stage.size());
      for (const TimedStep &ts : stage)
        steps.push_back({ts.step.kind, ts.step.chunk, ts.step.microbatch,
                         ts.start, ts.end});
    }
  // Idle over compute: the textbook fraction where there is one, else what
  // the timeline shows for the busiest stage.
  p.bubble = split ? (busiest > 0 ? (end - busiest) / busiest : 0)
                   : getBubbleFraction(*shape);
  double iteration = end + slowestReductions + slowestOptimizer;
  p.afterSchedule = slowestReductions + slowestOptimizer;
  // Each stage's time section ends with the iteration (a search's estimate
  // has no time sections).
  if (!numbersOnly) {
    SectionBuilder extra(fn, b, "", "");
    extra.addSeconds("iteration", "iteration (schedule + optimizer)", iteration);
    FailureOr<Section> sec = extra.take();
    if (failed(sec))
      return failure();
    for (StageReport &sr : report.stages)
      sr.sections.back().rows.push_back(sec->rows.front());
  }
  report.pipeline = std::move(p);

  // The whole job: every rank of every stage (a search's estimate reads its
  // time alone).
  std::string all = "the whole job (all " + std::to_string(job.gpus) + " GPUs)";
  if (!numbersOnly) {
    SectionBuilder jf(fn, b, "job_flops", "FLOPs per iteration, " + all);
    addFlopRows(jf, jobCosts, sym::Expr(1));
    SectionBuilder jt(fn, b, "job_traffic",
                      "Bytes sent per iteration, " + all + ", ring algorithms");
    sym::Expr sent;
    for (const CommVolume &v : jobTraffic) {
      jt.add(commKey(v), commLabel(v), "B", v.sentBytes);
      sent += v.sentBytes;
    }
    jt.add("total", "total bytes sent", "B", sent);
    for (SectionBuilder *sb : {&jf, &jt}) {
      FailureOr<Section> sec = sb->take();
      if (failed(sec))
        return failure();
      report.totals.push_back(std::move(*sec));
    }
  }
  SectionBuilder jtime(fn, b, "job_time",
                       "Time per iteration, " + all + " (" +
                           device.displayName() + ")");
  jtime.addSeconds("iteration", "iteration (schedule + optimizer)", iteration);
  sym::Expr flops;
  for (unsigned i = 0; i < kNumPhases && !numbersOnly; ++i)
    flops += jobCosts.phases[i].flops();
  sym::Result<sym::Rational> flopValue = flops.evaluateRational(b);
  if (!numbersOnly && flopValue && iteration > 0)
    jtime.addRounded("flops_per_gpu", "FLOP/s per GPU (all FLOPs)", "FLOP/s",
                     flopValue->toDouble() / iteration / double(job.gpus));
  if (b.count("B") && b.count("S") && iteration > 0) {
    double tokens = double(b.at("B")) * double(b.at("S"));
    jtime.addValue("tokens", "tokens per iteration (B S)", "tokens",
                   sym::Rational(b.at("B") * b.at("S")));
    jtime.addRounded("tokens_per_second", "tokens per second", "tokens/s",
                     tokens / iteration);
  }
  FailureOr<Section> sec = jtime.take();
  if (failed(sec))
    return failure();
  report.totals.push_back(std::move(*sec));
  return success();
}
