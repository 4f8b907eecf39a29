//===- RequestReport.cpp - A request stream through a serving program -----===//

#include "RequestReport.h"

#include "ReportSections.h"

#include "Stage/Analysis/MemoryAnalysis.h"
#include "Stage/Analysis/StepTimes.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageTypeRewriting.h"
#include "Stage/Target/Chakra/ChakraTranslation.h"
#include "Stage/Support/BatchScheduler.h"
#include "Stage/Support/RequestWorkload.h"
#include "Stage/Support/SafeFiles.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

namespace {
/// The largest workload file read.
constexpr uint64_t kMaxWorkloadBytes = uint64_t(1) << 30;

struct Slo {
  double ttft = 0, tpot = 0; // seconds; 0: no bound
  /// The fraction of requests that must meet the bounds (DistServe's
  /// attainment target).
  double attainment = 0.9;
};

struct SchedulerOptions {
  ::stage::SchedulerConfig config;
  /// The fraction of the device's memory the server may use (vLLM's
  /// gpu_memory_utilization).
  double memoryUtilization = 0.9;
};

LogicalResult loadWorkload(Operation *fn, StringRef spec,
                           std::vector<::stage::Request> &out) {
  if (::stage::isSyntheticWorkload(spec)) {
    if (std::optional<std::string> e = ::stage::generateRequests(spec, out))
      return fn->emitError("--requests=") << spec << ": " << *e;
    return success();
  }
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> buf = ::stage::files::readRegularFile(
      spec.str(), kMaxWorkloadBytes, error);
  if (!buf)
    return fn->emitError("--requests: ")
           << error
           << " (a file of JSON lines or CSV, or a stream as in "
              "poisson:rate=4,count=1000,prompt=512,output=128)";
  bool csv = spec.ends_with_insensitive(".csv");
  if (std::optional<::stage::WorkloadError> e =
          ::stage::parseRequests(buf->getBuffer(), csv, out)) {
    Location at = FileLineColLoc::get(fn->getContext(), spec, e->line,
                                      e->column);
    return emitError(at) << e->message;
  }
  return success();
}

FailureOr<SchedulerOptions> parseScheduler(Operation *fn, StringRef text) {
  SchedulerOptions o;
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    int64_t *field = llvm::StringSwitch<int64_t *>(key)
                         .Case("max-batched-tokens", &o.config.maxBatchedTokens)
                         .Case("max-running", &o.config.maxRunning)
                         .Case("block", &o.config.blockTokens)
                         .Case("replicas", &o.config.replicas)
                         .Default(nullptr);
    if (field) {
      if (value.getAsInteger(10, *field) || *field < 1 ||
          *field > (int64_t(1) << 30))
        return fn->emitError("--scheduler: ")
               << key << " must be an integer from 1 to 2^30";
      continue;
    }
    if (key == "memory-utilization") {
      double u;
      if (value.getAsDouble(u) || !(u > 0 && u <= 1))
        return fn->emitError(
            "--scheduler: memory-utilization must be a fraction in (0, 1]");
      o.memoryUtilization = u;
      continue;
    }
    return fn->emitError("--scheduler: unknown key '")
           << key
           << "': expected max-batched-tokens, max-running, block, replicas "
              "or memory-utilization";
  }
  return o;
}

/// Seconds, as `0.5`, `500ms` or `500us`.
std::optional<double> parseSeconds(StringRef s) {
  double scale = 1;
  if (s.consume_back("ms"))
    scale = 1e-3;
  else if (s.consume_back("us"))
    scale = 1e-6;
  else
    s.consume_back("s");
  double v;
  if (s.getAsDouble(v) || !std::isfinite(v) || v <= 0)
    return std::nullopt;
  return v * scale;
}

FailureOr<Slo> parseSlo(Operation *fn, StringRef text) {
  Slo slo;
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [key, value] = item.split(':');
    if (key.trim() == "attainment") {
      double f;
      if (value.trim().getAsDouble(f) || !(f > 0 && f <= 1))
        return fn->emitError("--slo: attainment must be a fraction in (0, 1]");
      slo.attainment = f;
      continue;
    }
    std::optional<double> s = parseSeconds(value.trim());
    double *field = key.trim() == "ttft"   ? &slo.ttft
                    : key.trim() == "tpot" ? &slo.tpot
                                           : nullptr;
    if (!field || !s)
      return fn->emitError("--slo: bad bound '")
             << item << "': expected ttft:SECONDS,tpot:SECONDS (as in "
             << "ttft:2,tpot:100ms), and attainment:FRACTION";
    *field = *s;
  }
  if (!slo.ttft && !slo.tpot && !text.empty())
    return fn->emitError("--slo: name a bound, ttft:SECONDS or tpot:SECONDS");
  return slo;
}

/// KV-cache bytes per cached position of one request on a rank: every
/// `stage.kv_cache` (`[L, requests, positions, ...]`) without its request
/// and position dimensions. A sliding-window layer is charged for every
/// position, as a paged cache without a window-aware allocator holds them.
FailureOr<double> kvBytesPerPosition(func::FuncOp fn, const sym::Bindings &b) {
  double bytes = 0;
  WalkResult r = fn.walk([&](KVCacheOp cache) {
    SymTensorType t = cache.getResult().getType();
    double n = double(t.getElementBytes());
    for (unsigned d = 0; d < t.getRank(); ++d) {
      if (d == 1 || d == 2)
        continue;
      sym::Result<sym::Rational> v = t.getDim(d).evaluateRational(b);
      if (!v) {
        cache.emitError("KV cache size: ") << v.error();
        return WalkResult::interrupt();
      }
      n *= v->toDouble();
    }
    bytes += n;
    return WalkResult::advance();
  });
  if (r.wasInterrupted())
    return failure();
  if (bytes <= 0)
    return fn.emitError("a request stream needs a program with a KV cache");
  return bytes;
}

/// The KV-cache blocks a replica holds: the device's usable memory less
/// the weights and the working set of the largest iteration (the token
/// budget, as many decodes as may run), in blocks of `blockTokens`.
FailureOr<int64_t> kvBlocks(func::FuncOp fn, const sym::Bindings &b,
                            const DeviceModel &device,
                            const SchedulerOptions &o, double perPosition) {
  sym::Bindings largest = b;
  int64_t decodes = std::min(o.config.maxRunning, o.config.maxBatchedTokens);
  largest["B"] = decodes;
  largest["C"] = std::max<int64_t>(o.config.maxBatchedTokens - decodes, 1);
  FailureOr<std::vector<StageMemory>> memory =
      analyzeMemory(fn, largest, device);
  if (failed(memory))
    return failure();
  const StageMemory &m = memory->front();
  sym::Result<sym::Rational> weights = m.exprs->weights.evaluateRational(b);
  if (!weights)
    return fn.emitError("weights: ") << weights.error();
  double usable =
      device.memoryCapacity * o.memoryUtilization - weights->toDouble() -
      std::max(m.decodeTransient.toDouble(), m.prefillTransient.toDouble());
  double blockBytes = perPosition * double(o.config.blockTokens);
  return int64_t(std::max(0.0, std::floor(usable / blockBytes)));
}

/// The traces of a stream's iterations `mixes` in `dir`: the program's
/// decode steps, one per iteration under its own bindings: `B` its decode
/// tokens, `T + 1` their mean context, `C` its prompt chunks' tokens and
/// `P` their prefix. The step's chunk is at `j C` in the program; here
/// `j` is `P / C` (exact for one chunk; several are traced as one of their
/// total size whose prefix keeps their attention scores, rounded to a
/// position). A decode-only iteration's chunk part is empty (no node).
LogicalResult writeWindowTraces(func::FuncOp fn, const sym::Bindings &b,
                                const DeviceModel &device,
                                const std::vector<::stage::IterationMix> &mixes,
                                StringRef dir) {
  auto module = fn->getParentOfType<ModuleOp>();
  OwningOpRef<ModuleOp> copy = module.clone();
  sym::Substitution prefix;
  prefix["j"] = sym::Expr::symbol("P").divExact(sym::Expr::symbol("C"));
  substituteSymbols(*copy, prefix);
  // The module's own bindings name the prefix too (each step binds its).
  sym::Bindings whole = b;
  whole["P"] = 0;
  setModuleBindings(*copy, whole);
  TraceOptions t;
  t.device = &device;
  for (const ::stage::IterationMix &mix : mixes) {
    double tokens = 0, scores = 0;
    for (const ::stage::IterationMix::Chunk &c : mix.chunks) {
      tokens += double(c.size);
      scores += double(c.size) * double(c.prefix + c.size);
    }
    // The program samples its B decode tokens: an iteration of prompt
    // chunks alone is traced with one, over one position (the token a
    // finished prompt yields).
    sym::Bindings step;
    step["B"] = std::max<int64_t>(mix.decodes, 1);
    step["T"] = mix.decodes ? std::llround(mix.decodeContext /
                                           double(mix.decodes)) - 1
                            : 0;
    step["C"] = int64_t(tokens);
    step["P"] = tokens > 0 ? std::max<int64_t>(
                                 0, std::llround(scores / tokens - tokens))
                           : 0;
    t.servingSteps.push_back(step);
  }
  FailureOr<int64_t> ranks = writeTraces(*copy, dir, t);
  return success(succeeded(ranks));
}

/// Mean and the percentiles of `v` (linear between the nearest ranks).
struct Summary {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Summary summarize(std::vector<double> v) {
  Summary s;
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    double pos = q * double(v.size() - 1);
    size_t lo = size_t(std::floor(pos));
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
  };
  double sum = 0;
  for (double x : v)
    sum += x;
  s.mean = sum / double(v.size());
  s.p50 = at(0.5);
  s.p90 = at(0.9);
  s.p99 = at(0.99);
  s.max = v.back();
  return s;
}

/// A fraction or rate to six decimals, exactly as printed.
sym::Rational decimal(double x) {
  return sym::Rational(sym::BigInt(int64_t(std::llround(x * 1e6))),
                       sym::BigInt(1000000));
}
} // namespace

FailureOr<RequestsReport> mlir::stage::report::buildRequestsReport(
    func::FuncOp fn, const sym::Bindings &b, const DeviceModel &device,
    int64_t gpus, const RequestStreamOptions &o) {
  std::vector<::stage::Request> requests;
  if (failed(loadWorkload(fn, o.workload, requests)))
    return failure();
  if (o.rateScale != 1)
    for (::stage::Request &r : requests)
      r.arrival /= o.rateScale;
  FailureOr<SchedulerOptions> sched = parseScheduler(fn, o.scheduler);
  FailureOr<Slo> slo = parseSlo(fn, o.slo);
  if (failed(sched) || failed(slo))
    return failure();
  FailureOr<IterationTimes> times = IterationTimes::compile(fn, b, device);
  if (failed(times))
    return failure();
  FailureOr<double> perPosition = kvBytesPerPosition(fn, b);
  if (failed(perPosition))
    return failure();
  FailureOr<int64_t> blocks = kvBlocks(fn, b, device, *sched, *perPosition);
  if (failed(blocks))
    return failure();
  ::stage::SchedulerConfig config = sched->config;
  config.kvBlocks = *blocks;
  // The window asked for, by the iterations' order (the scheduler records
  // each right after timing it).
  std::optional<std::pair<int64_t, int64_t>> window;
  if (!o.window.empty()) {
    auto [firstText, countText] = StringRef(o.window).split(':');
    int64_t from, count;
    if (firstText.getAsInteger(10, from) || countText.getAsInteger(10, count) ||
        from < 0 || count < 1)
      return fn.emitError("--requests-window=")
             << o.window << ": expected FIRST:COUNT (iterations, from 0)";
    window = {from, from + std::min(count, INT64_MAX - from)};
  }
  if (!o.tracesDir.empty() && !window)
    return fn.emitError("--requests-traces: name the iterations with "
                        "--requests-window=FIRST:COUNT");
  std::vector<::stage::IterationMix> windowMixes;
  int64_t timed = 0;
  ::stage::ServingRun run;
  if (std::optional<std::string> e = ::stage::simulateServing(
          requests, config,
          [&](const ::stage::IterationMix &mix) {
            if (window && timed >= window->first && timed < window->second)
              windowMixes.push_back(mix);
            ++timed;
            return times->seconds(mix);
          },
          run))
    return fn.emitError("--requests: ") << *e;

  // Per request.
  std::vector<double> ttft, tpot, e2e;
  double first = requests.front().arrival, last = 0, sumLatency = 0;
  int64_t outputTokens = 0, promptTokens = 0, good = 0;
  for (const ::stage::RequestOutcome &r : run.requests) {
    ttft.push_back(r.firstToken - r.arrival);
    e2e.push_back(r.finish - r.arrival);
    double perToken = r.outputTokens > 1 ? (r.finish - r.firstToken) /
                                               double(r.outputTokens - 1)
                                         : 0;
    if (r.outputTokens > 1)
      tpot.push_back(perToken);
    last = std::max(last, r.finish);
    sumLatency += r.finish - r.arrival;
    outputTokens += r.outputTokens;
    promptTokens += r.promptTokens;
    bool meets = (!slo->ttft || ttft.back() <= slo->ttft) &&
                 (!slo->tpot || perToken <= slo->tpot);
    good += meets;
  }
  double duration = last - first;
  double n = double(run.requests.size());
  // Requests in the system (waiting or running), averaged over time from
  // the scheduler's own queues at each iteration (idle gaps count 0);
  // Little's law says it equals the arrival rate times the mean latency.
  double inSystem = 0;
  for (const ::stage::IterationRecord &it : run.iterations)
    inSystem += double(it.running + it.waiting) * it.seconds;
  inSystem /= duration > 0 ? duration : 1;
  double arrivalSpan = requests.back().arrival - first;

  RequestsReport report;
  report.workload = o.workload;
  SectionBuilder stream(fn, b, "stream",
                        "Request stream (" + device.displayName() + ")");
  stream.addValue("requests", "requests", "", sym::Rational(int64_t(n)));
  stream.addValue("prompt_tokens", "prompt tokens", "",
                  sym::Rational(promptTokens));
  stream.addValue("output_tokens", "output tokens", "",
                  sym::Rational(outputTokens));
  stream.addValue("gpus", "GPUs (replicas x the program's)", "",
                  sym::Rational(gpus * config.replicas));
  stream.addSeconds("duration_seconds",
                    "first arrival to last token", duration);
  stream.addValue("throughput_tokens_per_second", "output tokens/s",
                  "tokens/s", decimal(duration > 0 ? double(outputTokens) /
                                                         duration
                                                   : 0));
  stream.addValue("throughput_tokens_per_second_per_gpu",
                  "output tokens/s per GPU", "tokens/s",
                  decimal(duration > 0 ? double(outputTokens) / duration /
                                             double(gpus * config.replicas)
                                       : 0));
  stream.addValue("requests_per_second", "requests/s", "",
                  decimal(duration > 0 ? n / duration : 0));
  stream.addValue("arrival_rate", "arrivals/s", "",
                  decimal(arrivalSpan > 0 ? (n - 1) / arrivalSpan : 0));
  stream.addValue("mean_requests_in_system",
                  "requests waiting or running, time average", "",
                  decimal(inSystem));
  stream.addValue("littles_law_requests",
                  "arrival rate x mean latency (Little's law)", "",
                  decimal(duration > 0 ? sumLatency / duration : 0));
  stream.addValue("iterations", "iterations", "",
                  sym::Rational(int64_t(run.iterations.size())));
  stream.addValue("preemptions", "preemptions (recomputed)", "",
                  sym::Rational(run.preemptions));

  SmallVector<SectionBuilder, 3> latencies;
  for (auto [key, title, values] :
       {std::tuple<const char *, const char *, std::vector<double> *>{
            "ttft_seconds", "Time to first token", &ttft},
        {"tpot_seconds", "Time per output token (after the first)", &tpot},
        {"e2e_seconds", "End-to-end latency", &e2e}}) {
    Summary s = summarize(*values);
    SectionBuilder &sb = latencies.emplace_back(fn, b, key, title);
    sb.addSeconds("mean", "mean", s.mean);
    sb.addSeconds("p50", "p50", s.p50);
    sb.addSeconds("p90", "p90", s.p90);
    sb.addSeconds("p99", "p99", s.p99);
    sb.addSeconds("max", "max", s.max);
  }

  SectionBuilder cache(fn, b, "kv_cache", "KV cache (per replica)");
  cache.addValue("bytes_per_token", "bytes per cached position per GPU", "B",
                 decimal(*perPosition));
  cache.addValue("capacity_tokens", "positions it holds", "",
                 sym::Rational(*blocks * config.blockTokens));
  cache.addValue("block_tokens", "positions per block", "",
                 sym::Rational(config.blockTokens));
  double peakUsed = 0, meanUsed = 0;
  for (const ::stage::IterationRecord &it : run.iterations) {
    double used = double(it.kvBlocksUsed) / double(*blocks);
    peakUsed = std::max(peakUsed, used);
    meanUsed += used * it.seconds;
  }
  cache.addValue("peak_occupancy", "peak occupancy (fraction)", "",
                 decimal(peakUsed));
  cache.addValue("mean_occupancy", "mean occupancy while serving (fraction)",
                 "", decimal(duration > 0 ? meanUsed / duration /
                                                double(config.replicas)
                                          : 0));

  SectionBuilder scheduler(fn, b, "scheduler", "Scheduler");
  scheduler.addValue("max_batched_tokens", "tokens per iteration", "",
                     sym::Rational(config.maxBatchedTokens));
  scheduler.addValue("max_running", "running requests", "",
                     sym::Rational(config.maxRunning));
  scheduler.addValue("replicas", "replicas", "",
                     sym::Rational(config.replicas));
  scheduler.addValue("memory_utilization", "memory utilization", "",
                     decimal(sched->memoryUtilization));

  for (SectionBuilder *sb : {&stream, &latencies[0], &latencies[1],
                             &latencies[2], &cache, &scheduler}) {
    FailureOr<Section> s = sb->take();
    if (failed(s))
      return failure();
    report.sections.push_back(std::move(*s));
  }
  if (slo->ttft || slo->tpot) {
    SectionBuilder sb(fn, b, "slo", "Service-level objective");
    if (slo->ttft)
      sb.addSeconds("ttft_seconds", "time to first token at most", slo->ttft);
    if (slo->tpot)
      sb.addSeconds("tpot_seconds", "time per output token at most",
                    slo->tpot);
    sb.addValue("attainment", "requests that meet it (fraction)", "",
                decimal(double(good) / n));
    sb.addValue("target_attainment", "the fraction that must", "",
                decimal(slo->attainment));
    sb.addValue("met", "met (1) or not (0)", "",
                sym::Rational(int64_t(double(good) / n >= slo->attainment)));
    sb.addValue("goodput_requests_per_second", "goodput (requests/s)", "",
                decimal(duration > 0 ? double(good) / duration : 0));
    sb.addValue("goodput_requests_per_second_per_gpu",
                "goodput per GPU (requests/s)", "",
                decimal(duration > 0 ? double(good) / duration /
                                           double(gpus * config.replicas)
                                     : 0));
    FailureOr<Section> s = sb.take();
    if (failed(s))
      return failure();
    report.sections.push_back(std::move(*s));
  }

  if (window) {
    int64_t from = window->first;
    if (from >= int64_t(run.iterations.size()))
      return fn.emitError("--requests-window=")
             << o.window << ": the stream has "
             << run.iterations.size() << " iterations";
    int64_t end = std::min<int64_t>(window->second, run.iterations.size());
    if (!o.tracesDir.empty() &&
        failed(writeWindowTraces(fn, b, device, windowMixes, o.tracesDir)))
      return failure();
    for (int64_t i = from; i < end; ++i) {
      const ::stage::IterationRecord &it = run.iterations[i];
      report.window.push_back({i, it.replica, it.start, it.seconds, it.decodes,
                               it.promptTokens, it.running, it.waiting,
                               it.kvBlocksUsed});
    }
  }

  // Occupancy over time: the fullest replica's, at most 400 points (the
  // largest in each slice of time).
  constexpr size_t kPoints = 400;
  if (duration > 0) {
    std::vector<double> peak(kPoints, -1);
    for (const ::stage::IterationRecord &it : run.iterations) {
      size_t slot = std::min(
          kPoints - 1,
          size_t(double(kPoints) * (it.start - first) / duration));
      peak[slot] = std::max(peak[slot],
                            double(it.kvBlocksUsed) / double(*blocks));
    }
    for (size_t i = 0; i < kPoints; ++i)
      if (peak[i] >= 0)
        report.occupancy.push_back(
            {first + duration * double(i) / double(kPoints), peak[i]});
  }
  return report;
}

LogicalResult
mlir::stage::report::checkStreamOptions(Operation *at,
                                        const RequestStreamOptions &o) {
  std::vector<::stage::Request> requests;
  return success(succeeded(loadWorkload(at, o.workload, requests)) &&
                 succeeded(parseScheduler(at, o.scheduler)) &&
                 succeeded(parseSlo(at, o.slo)));
}

FailureOr<StreamEstimate> mlir::stage::report::estimateStream(
    ModuleOp module, const sym::Bindings &b, const DeviceModel &device,
    const RequestStreamOptions &o) {
  func::FuncOp step;
  for (auto fn : module.getOps<func::FuncOp>())
    if (isTrainingStep(module, fn))
      step = fn;
  if (!step)
    return module.emitError("expected a partitioned serving program");
  int64_t gpus = 1;
  module.walk([&](GridOp grid) {
    for (StringRef axis : grid.getAxes().getAsValueRange<StringAttr>())
      gpus *= b.count(axis.str()) ? b.at(axis.str()) : 1;
  });
  FailureOr<RequestsReport> r = buildRequestsReport(step, b, device, gpus, o);
  if (failed(r))
    return failure();
  auto value = [&](StringRef section, StringRef key) {
    const Section *s = r->find(section);
    const Quantity *q = s ? s->find(key) : nullptr;
    return q ? q->value.toDouble() : 0.0;
  };
  StreamEstimate e;
  e.gpus = int64_t(value("stream", "gpus"));
  e.throughputPerGpu = value("stream", "throughput_tokens_per_second_per_gpu");
  e.arrivalRate = value("stream", "arrival_rate");
  e.requestsPerSecond = value("stream", "requests_per_second");
  e.ttftP50 = value("ttft_seconds", "p50");
  e.ttftP99 = value("ttft_seconds", "p99");
  e.tpotP50 = value("tpot_seconds", "p50");
  e.tpotP99 = value("tpot_seconds", "p99");
  e.preemptions = int64_t(value("stream", "preemptions"));
  e.attainment = value("slo", "attainment");
  e.goodputPerGpu = value("slo", "goodput_requests_per_second_per_gpu");
  e.meetsSlo = value("slo", "met") > 0;
  return e;
}

