//===- ServingReport.cpp - Per-rank-class part of a serving report --------===//

#include "ServingReport.h"

#include "ReportSections.h"

#include "Stage/Analysis/ExpertRouting.h"
#include "Stage/Analysis/MemoryAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

namespace {

/// Whether every rank class's peak fits `device`'s memory under `b`
/// (silently false when a size does not evaluate).
bool fits(func::FuncOp fn, const sym::Bindings &b, const DeviceModel &device) {
  ScopedDiagnosticHandler quiet(fn.getContext(),
                                [](Diagnostic &) { return success(); });
  FailureOr<std::vector<StageMemory>> m = analyzeMemory(fn, b, device);
  if (failed(m))
    return false;
  return llvm::all_of(
      *m, [&](const StageMemory &s) {
        return s.peak.toDouble() <= device.memoryCapacity;
      });
}

/// The largest multiple of `unit` for `symbol` (at most 2^40) whose run
/// fits; 0 if none does. Memory grows with the batch and the context.
int64_t largestFitting(func::FuncOp fn, const sym::Bindings &b,
                       StringRef symbol, int64_t unit,
                       const DeviceModel &device) {
  auto ok = [&](int64_t k) {
    sym::Bindings probe = b;
    probe[symbol.str()] = k * unit;
    return fits(fn, probe, device);
  };
  if (!ok(1))
    return 0;
  int64_t lo = 1, hi = 2;
  while (hi < (int64_t(1) << 40) / unit && ok(hi))
    lo = hi, hi *= 2;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    (ok(mid) ? lo : hi) = mid;
  }
  return lo * unit;
}

/// The roofline times of a rank class's chunks, summed.
FailureOr<PhaseTimes> servingTimes(const RankClass &cls, const sym::Bindings &b,
                                   const DeviceModel &device) {
  PhaseTimes t;
  for (Operation *chunk : cls.chunks) {
    FailureOr<PhaseTimes> ct = phaseTimes(chunk, b, device);
    if (failed(ct))
      return failure();
    for (unsigned i = 0; i < kNumPhases; ++i) {
      t.compute[i] += ct->compute[i];
      t.comm[i] += ct->comm[i];
    }
  }
  return t;
}

/// The expert weights a decode step of one group reads on a rank of
/// `cls`: of every expert it holds, and of those its tokens are expected to
/// reach under the module's routing (ExpertRouting.h); 0 without experts.
struct ExpertReads {
  double all = 0, reached = 0;
};
ExpertReads decodeExpertReads(const RankClass &cls, const sym::Bindings &b,
                              int64_t steps, int64_t groups) {
  ExpertReads r;
  if (steps <= 0)
    return r;
  for (Operation *chunk : cls.chunks) {
    RoutingModel routing(chunk);
    walkWithCounts(chunk, [&](Operation *op, const Multiplicity &n) {
      std::optional<RoutedOp> routed = getRoutedOp(op);
      if (!routed || getPhase(op) != Phase::Decode)
        return;
      sym::Result<sym::Rational> bytes =
          routed->expertBytes.evaluateRational(b);
      sym::Result<double> runs = n.countUnder(b);
      if (!bytes || !runs)
        return;
      double perStep = bytes->toDouble() * *runs / double(steps * groups);
      r.all += perStep;
      r.reached += perStep * routing.reachedUnder(b, *routed);
    });
  }
  return r;
}

/// The whole job's FLOPs (and per generated token, when it decodes).
FailureOr<Section> jobFlopsSection(func::FuncOp fn, const sym::Bindings &b,
                                   const PhaseCosts &jobCosts,
                                   const sym::Expr &stepsExpr, int64_t N,
                                   const std::string &everyone) {
  SectionBuilder jf(fn, b, "job_flops", "FLOPs of " + everyone);
  sym::Expr all;
  for (Phase p : kServingPhases) {
    jf.add(getPhaseName(p), std::string(getPhaseName(p)) + " FLOPs", "FLOP",
           jobCosts.of(p).flops());
    all += jobCosts.of(p).flops();
  }
  jf.add("total", "total FLOPs", "FLOP", all);
  if (N > 0) {
    sym::Expr tokens = sym::Expr::symbol("B") * stepsExpr;
    jf.add("decode_per_token", "decode FLOPs per generated token", "FLOP",
           jobCosts.of(Phase::Decode).flops().divExact(tokens));
    jf.add("decode_contraction_per_token", "of which in contractions", "FLOP",
           jobCosts.of(Phase::Decode).contractionFlops.divExact(tokens));
    jf.add("decode_bytes_per_token", "decode bytes moved per generated token",
           "B", jobCosts.of(Phase::Decode).bytes.divExact(tokens));
  }
  return jf.take();
}

} // namespace

LogicalResult mlir::stage::report::buildServingReports(
    func::FuncOp fn, const sym::Bindings &b, bool numbersOnly,
    const DeviceModel &device, Report &report) {
  std::shared_ptr<const StepStructure> structure = getStepStructure(fn);
  const StepStructure &step = *structure;
  FailureOr<std::vector<StageMemory>> memory = analyzeMemory(fn, b, device);
  if (failed(memory))
    return failure();
  const JobReport &job = *report.job;
  sym::Result<int64_t> M = step.microBatches.evaluate(b);
  if (!M)
    return fn.emitError("serving micro-batches: ") << M.error();
  // Decode steps (or, under continuous batching, mixed iterations), each
  // generating one token per running request.
  ServeOp serve = getServe(step.classes.front().chunks.front());
  sym::Expr stepsExpr = serve.getDecodeSteps();
  sym::Result<int64_t> stepCount = stepsExpr.evaluate(b);
  if (!stepCount)
    return fn.emitError("decode steps: ") << stepCount.error();
  int64_t N = *stepCount;
  bool chunked = bool(serve.getChunk());
  sym::Expr ranksPerStage(1);
  for (const auto &[axis, d] : job.axes)
    if (axis != "pp" && d > 1)
      ranksPerStage *= sym::Expr::symbol(axis);

  // The largest batch and context that fit: requests come in multiples of
  // the groups times the ranks that split them, prompts in multiples of cp.
  int64_t batchUnit = *M * job.degree("dp") * job.degree("ep");
  // (A search reads the peak and times only: the largest batch and context
  // that fit take dozens of memory walks.)
  int64_t maxBatch = numbersOnly ? 0
                                 : largestFitting(fn, b, "B", batchUnit,
                                                  device);
  int64_t maxPrompt = numbersOnly ? 0
                                  : largestFitting(fn, b, "S", job.degree("cp"),
                                                   device);

  PhaseCosts jobCosts;
  std::vector<double> prefillGroup, decodeGroupStep;
  double jobExpertReads = 0;
  sym::Result<int64_t> ranksValue = ranksPerStage.evaluate(b);
  double ranksPerStageValue = ranksValue ? double(*ranksValue) : 0;
  std::string routingName = getRoutingSpec(fn).empty()
                                ? std::string("uniform")
                                : getRoutingSpec(fn).str();
  for (auto [cls, mem] : llvm::zip(step.classes, *memory)) {
    StageReport sr;
    sr.stage = cls.stage;
    sr.layers = layerRanges(cls);
    sr.peakAt = mem.peakAt;

    FailureOr<PhaseTimes> times = servingTimes(cls, b, device);
    if (failed(times))
      return failure();
    const PhaseTimes &t = *times;
    prefillGroup.push_back(t.of(Phase::Prefill) / double(*M));
    decodeGroupStep.push_back(N ? t.of(Phase::Decode) / double(N * *M) : 0);

    SectionBuilder m(fn, b, "memory", "Memory per rank (bytes)");
    m.add("weights", "weights", "B", mem.exprs->weights);
    if (numbersOnly) {
      // A search reads the weights, the peak and the times: no symbolic
      // FLOPs, traffic or communication (most of a plan's evaluation).
      m.addValue("peak", "peak", "B", mem.peak);
      m.add("parameters", "parameters held", "", mem.exprs->parameters);
      FailureOr<Section> sec = m.take();
      if (failed(sec))
        return failure();
      sr.sections.push_back(std::move(*sec));
      report.stages.push_back(std::move(sr));
      continue;
    }
    // Sliding-window layers keep a ring of their last W positions;
    // state-space layers a state per sequence instead of positions.
    std::set<std::string> symbols = mem.kvCache.symbols();
    std::string windowed =
        std::string(symbols.count("W") ? "; W in sliding-window layers" : "") +
        (symbols.count("Ns") ? "; a state per request in state-space layers"
                             : "");
    m.add("kv_cache",
          "KV cache at the end of decode (S + N positions" + windowed + ")",
          "B", mem.kvCache);
    sym::Result<sym::Expr> start = mem.kvCache.substitute({{"N", sym::Expr()}});
    m.add("kv_cache_start",
          "KV cache at the start of decode (S positions" + windowed + ")", "B",
          start ? *start : mem.kvCache);
    m.addValue("prefill_transient", "largest prefill working set", "B",
               mem.prefillTransient);
    m.addValue("decode_transient", "largest decode-step working set", "B",
               mem.decodeTransient);
    m.addValue("peak", "peak", "B", mem.peak);
    m.add("parameters", "parameters held", "", mem.exprs->parameters);
    m.addValue("max_batch",
               "largest batch B that fits " + device.displayName() + " (requests)", "",
               sym::Rational(maxBatch));
    int64_t decoded = b.count("N") ? b.at("N") : 0;
    m.addValue("max_context",
               "largest context S + N that fits " + device.displayName() +
                   " (positions)",
               "", sym::Rational(maxPrompt ? maxPrompt + decoded : 0));

    SmallVector<Operation *> chunkOps(cls.chunks.begin(), cls.chunks.end());
    SectionBuilder f(fn, b, "flops", "FLOPs per rank");
    SectionBuilder by(fn, b, "bytes", "Memory traffic per rank (bytes)");
    PhaseCosts total = sumPhaseCosts(chunkOps);
    sym::Expr all, contraction;
    for (Phase p : kServingPhases) {
      f.add(getPhaseName(p), std::string(getPhaseName(p)) + " FLOPs", "FLOP",
            total.of(p).flops());
      by.add(getPhaseName(p),
             std::string(getPhaseName(p)) + " bytes read and written", "B",
             total.of(p).bytes);
      all += total.of(p).flops();
      contraction += total.of(p).contractionFlops;
      jobCosts.of(p) += total.of(p).scaled(ranksPerStage);
    }
    f.add("total", "total FLOPs", "FLOP", all);
    f.add("contraction", "of which in contractions", "FLOP", contraction);

    SectionBuilder c(fn, b, "communication",
                     "Communication per rank (message bytes)");
    for (const CommVolume &v : getCommVolumes(chunkOps))
      c.add(commKey(v), commLabel(v), "B", v.messageBytes);

    SectionBuilder tm(fn, b, "time",
                      "Time per rank (" + device.displayName() + ")");
    if (!chunked) {
      ExpertReads reads = decodeExpertReads(cls, b, N, *M);
      if (reads.all > 0) {
        by.addValue("decode_expert_weights_per_step",
                    "expert weights a decode step reads (every expert held)",
                    "B", sym::Rational(int64_t(std::llround(reads.all))));
        by.addValue(
            "decode_expert_weights_reached_per_step",
            "of which of the experts its tokens reach (expected, " +
                routingName + " routing)",
            "B", sym::Rational(int64_t(std::llround(reads.reached))));
        jobExpertReads += reads.reached * ranksPerStageValue;
      }
    }
    tm.addSeconds("prefill", "prefill (every group)", t.of(Phase::Prefill));
    tm.addSeconds("decode",
                  chunked ? "mixed iterations (decode and prompt chunks)"
                          : "decode (every step of every group)",
                  t.of(Phase::Decode));

    for (SectionBuilder *sb : {&m, &f, &by, &c, &tm}) {
      FailureOr<Section> sec = sb->take();
      if (failed(sec))
        return failure();
      sr.sections.push_back(std::move(*sec));
    }
    report.stages.push_back(std::move(sr));
  }

  // The whole job. A group's prefill passes every stage; the last group
  // starts when the slowest stage has done the others. A decode step of a
  // group passes every stage, and a stage serves the M groups in turn.
  double sumPrefill = 0, maxPrefill = 0, sumDecode = 0, maxDecode = 0;
  for (auto [p, d] : llvm::zip(prefillGroup, decodeGroupStep)) {
    sumPrefill += p;
    maxPrefill = std::max(maxPrefill, p);
    sumDecode += d;
    maxDecode = std::max(maxDecode, d);
  }
  double ttft = sumPrefill + double(*M - 1) * maxPrefill;
  double tpot = std::max(sumDecode, double(*M) * maxDecode);
  std::string everyone =
      "the whole job (all " + std::to_string(job.gpus) + " GPUs)";
  if (!numbersOnly) {
    FailureOr<Section> flops =
        jobFlopsSection(fn, b, jobCosts, stepsExpr, N, everyone);
    if (failed(flops))
      return failure();
    if (jobExpertReads > 0)
      flops->rows.push_back(
          {"decode_expert_weights_reached_per_step",
           "expert weights a decode step of one group reads (experts "
           "reached, expected)",
           "B", std::nullopt,
           sym::Rational(int64_t(std::llround(jobExpertReads)))});
    report.totals.push_back(std::move(*flops));
  }
  SectionBuilder jt(fn, b, "job_time",
                    "Serving times, " + everyone + " (" +
                        device.displayName() + ")");
  double gpus = double(job.gpus);
  double batch = b.count("B") ? double(b.at("B")) : 0;
  double prompt = b.count("S") ? double(b.at("S")) : 0;
  if (step.classes.size() && ttft > 0) {
    jt.addSeconds("ttft", "time to first token (the last request's)", ttft);
    jt.addRounded("prefill_tokens_per_second_per_gpu",
                  "prefill tokens/s per GPU", "tokens/s",
                  batch * prompt / ttft / gpus);
  }
  if (N > 0 && tpot > 0) {
    jt.addSeconds("tpot",
                  chunked ? "time per output token (one mixed "
                            "iteration)"
                          : "time per output token",
                  tpot);
    if (chunked)
      jt.addSeconds("ttft_chunked",
                    "time to first token of an arriving request (S/C "
                    "iterations)",
                    double(N) * tpot);
    jt.addRounded("decode_tokens_per_second_per_gpu", "decode tokens/s per GPU",
                  "tokens/s", batch / tpot / gpus);
    jt.addSeconds("total", "prefill and every decode step",
                  ttft + double(N) * tpot);
  }
  FailureOr<Section> times = jt.take();
  if (failed(times))
    return failure();
  report.totals.push_back(std::move(*times));
  return success();
}
