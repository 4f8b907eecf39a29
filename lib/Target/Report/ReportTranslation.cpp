//===- ReportTranslation.cpp - --stage-to-report --------------------------===//

#include "Stage/Target/Report/ReportTranslation.h"

#include "Stage/Target/ChakraVerify/Timeline.h"

#include "DisaggregatedReport.h"
#include "ReportFormat.h"
#include "ReportModel.h"
#include "RequestReport.h"

#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Target/TargetOptions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::stage;

namespace {
enum class ReportFormat { Markdown, Json, Csv, Html };

struct ReportOptions {
  llvm::cl::opt<ReportFormat> format{
      "format", llvm::cl::desc("Format of --stage-to-report"),
      llvm::cl::init(ReportFormat::Markdown),
      llvm::cl::values(
          clEnumValN(ReportFormat::Markdown, "markdown", "Markdown tables"),
          clEnumValN(ReportFormat::Json, "json", "JSON"),
          clEnumValN(ReportFormat::Csv, "csv", "CSV, one row per number"),
          clEnumValN(ReportFormat::Html, "html",
                     "a self-contained page with SVG charts"))};
  llvm::cl::opt<std::string> traces{
      "traces",
      llvm::cl::desc("--stage-to-report --format=html: also draw these "
                     "traces (the step's), one rank per stage, replayed in "
                     "time (stage-trace timeline)"),
      llvm::cl::value_desc("dir")};
  llvm::cl::opt<std::string> failIfOver{
      "fail-if-over",
      llvm::cl::desc("--stage-to-report: exit non-zero when a rank's memory "
                     "peak exceeds this size (as in 80GiB)"),
      llvm::cl::value_desc("size")};
  llvm::cl::opt<std::string> requests{
      "requests",
      llvm::cl::desc("--stage-to-report: serve a request stream with a "
                     "continuous-batching program: a file of JSON lines "
                     "({\"arrival\": s, \"prompt_tokens\": n, "
                     "\"output_tokens\": n}), a CSV file (those columns, or "
                     "the Azure traces' TIMESTAMP, ContextTokens, "
                     "GeneratedTokens), or a stream as in "
                     "poisson:rate=4,count=1000,prompt=uniform:128:2048,"
                     "output=exponential:256,seed=1"),
      llvm::cl::value_desc("file or stream")};
  llvm::cl::opt<std::string> scheduler{
      "scheduler",
      llvm::cl::desc("--requests: the scheduler, as in "
                     "max-batched-tokens=2048,max-running=256,block=16,"
                     "memory-utilization=0.9,replicas=1 (these are the "
                     "defaults)"),
      llvm::cl::value_desc("key=value,...")};
  llvm::cl::opt<std::string> slo{
      "slo",
      llvm::cl::desc("--requests: the service-level objective goodput "
                     "counts, as in ttft:2,tpot:100ms"),
      llvm::cl::value_desc("ttft:S,tpot:S")};
  llvm::cl::opt<std::string> window{
      "requests-window",
      llvm::cl::desc("--requests: list these iterations (their mix, start "
                     "and time), as in 100:10"),
      llvm::cl::value_desc("FIRST:COUNT")};
  llvm::cl::opt<std::string> requestTraces{
      "requests-traces",
      llvm::cl::desc("--requests-window: also write those iterations' "
                     "Chakra traces (one decode step each, under the "
                     "iteration's mix) to this directory, for ASTRA-sim"),
      llvm::cl::value_desc("dir")};
};
} // namespace

static ReportOptions &reportOptions() {
  static ReportOptions options;
  return options;
}

static void printReport(const report::Report &r, ReportFormat format,
                        raw_ostream &os) {
  switch (format) {
  case ReportFormat::Json:
    report::printJson(r, os);
    break;
  case ReportFormat::Csv:
    report::printCsv(r, os);
    break;
  case ReportFormat::Html:
    report::printHtml(r, os);
    break;
  case ReportFormat::Markdown:
    report::printMarkdown(r, os);
    break;
  }
}

/// A disaggregated run: each group's report under a title naming its
/// ranks (JSON: `{"groups": [{"name", "first_rank", "gpus", "report"}]}`).
static void printGroups(ArrayRef<report::GroupReport> groups,
                        ReportFormat format, raw_ostream &os) {
  auto title = [](const report::GroupReport &g) {
    int64_t last = g.firstRank + g.report.job->gpus - 1;
    return (g.name == ServingGroups::kPrefillGroup ? "Prefill" : "Decode") +
           std::string(" group, ranks ") + std::to_string(g.firstRank) +
           ".." + std::to_string(last);
  };
  switch (format) {
  case ReportFormat::Json: {
    llvm::json::OStream j(os, 2);
    j.object([&] {
      j.attributeArray("groups", [&] {
        for (const report::GroupReport &g : groups)
          j.object([&] {
            j.attribute("name", g.name);
            j.attribute("first_rank", g.firstRank);
            j.attribute("gpus", g.report.job->gpus);
            std::string text;
            llvm::raw_string_ostream r(text);
            report::printJson(g.report, r);
            j.attributeBegin("report");
            j.rawValue(StringRef(text).rtrim());
            j.attributeEnd();
          });
      });
    });
    os << "\n";
    break;
  }
  case ReportFormat::Csv:
    for (auto [i, g] : llvm::enumerate(groups))
      report::printCsv(g.report, os, g.name + " ", i == 0);
    break;
  case ReportFormat::Html: {
    SmallVector<std::pair<std::string, const report::Report *>> parts;
    for (const report::GroupReport &g : groups)
      parts.push_back({title(g), &g.report});
    report::printHtml(parts, os);
    break;
  }
  case ReportFormat::Markdown:
    for (const report::GroupReport &g : groups) {
      os << "# " << title(g) << "\n\n";
      report::printMarkdown(g.report, os);
      os << "\n";
    }
    break;
  }
}

/// The first stage whose memory peak exceeds `limit`, as an error.
static LogicalResult checkPeaks(ModuleOp module, const report::Report &r,
                                double limit, StringRef limitText,
                                StringRef group) {
  for (const report::StageReport &s : r.stages)
    if (const report::Quantity *peak = s.find("memory")->find("peak");
        peak->value.toDouble() > limit)
      return module.emitError()
             << group << "stage " << s.stage << " peaks at "
             << report::humanReadable(peak->value, "B")
             << ", over --fail-if-over=" << limitText;
  return success();
}

/// `r` with the traces in `dir` replayed (the first rank of each stage).
static LogicalResult addReplay(ModuleOp module, report::Report &r,
                               StringRef dir) {
  if (!r.job || !r.roofline)
    return module.emitError("--traces: the module is not a training step");
  ::stage::trace::TraceSetOptions o;
  o.dir = dir.str();
  ::stage::trace::TimelineOptions t;
  t.ranks = r.job->getStageFirstRanks();
  t.device = *r.roofline;
  ::stage::trace::ReplayedTimeline replay;
  std::string error = ::stage::trace::replayTimeline(o, t, replay);
  if (replay.ranks && replay.ranks != r.job->gpus)
    return module.emitError("--traces=")
           << dir << " holds " << replay.ranks << " ranks, the step runs on "
           << r.job->gpus;
  if (!error.empty())
    return module.emitError("--traces=") << dir << ": " << error;
  report::TraceReplay out;
  out.dir = dir.str();
  out.iteration = replay.iteration;
  out.durations = replay.durations;
  for (auto &[rank, nodes] : replay.byRank) {
    std::vector<report::TraceReplay::Step> steps;
    for (::stage::trace::ReplayedNode &n : nodes)
      steps.push_back({std::move(n.name), n.start, n.end, n.lane});
    out.ranks.push_back({rank, std::move(steps)});
  }
  r.replay = std::move(out);
  return success();
}

/// `r` with the request stream of `--requests` served.
static LogicalResult addRequests(ModuleOp module, const sym::Bindings &b,
                                 report::Report &r) {
  const ReportOptions &o = reportOptions();
  func::FuncOp step;
  for (auto fn : module.getOps<func::FuncOp>())
    if (report::isTrainingStep(module, fn))
      step = fn;
  if (!step || !r.job || !r.job->serving)
    return module.emitError("--requests: expected a partitioned serving "
                            "program (stage-infer with chunked-prefill=C)");
  FailureOr<report::RequestsReport> requests = report::buildRequestsReport(
      step, b, *r.roofline, r.job->gpus,
      {o.requests, o.scheduler, o.slo, o.window, o.requestTraces});
  if (failed(requests))
    return failure();
  r.requests = std::move(*requests);
  return success();
}

static bool overLimit = false;

bool mlir::stage::reportWasOverLimit() { return overLimit; }

void mlir::stage::registerToReportTranslation() {
  (void)reportOptions();
  registerBindingOption();
  registerDeviceOptions();
  TranslateFromMLIRRegistration reg(
      "stage-to-report",
      "FLOPs and bytes of each function, symbolic and bound",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        reportLocationsOnly(op->getContext());
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("expected a module");
        const ReportOptions &o = reportOptions();
        std::optional<double> limit;
        if (!o.failIfOver.empty() &&
            !(limit = parseByteSize(o.failIfOver)))
          return emitOptionError(module) << "--fail-if-over=" << o.failIfOver
                                         << ": expected a size, as in 80GiB";
        if (o.requests.empty() &&
            (!o.scheduler.empty() || !o.slo.empty() || !o.window.empty() ||
             !o.requestTraces.empty()))
          return emitOptionError(module)
                 << "--scheduler, --slo, --requests-window and "
                    "--requests-traces apply to a request stream: add "
                    "--requests";
        FailureOr<std::optional<DeviceModel>> device = getDeviceModel(module, "");
        if (failed(device))
          return failure();
        report::ReportRequest request{*device};
        if (std::optional<ServingGroups> groups = getServingGroups(module)) {
          if (!o.requests.empty())
            return emitOptionError(module)
                   << "--requests: a disaggregated program is not served "
                      "as a stream yet; serve a chunked-prefill program";
          FailureOr<std::vector<report::GroupReport>> r =
              report::buildGroupReports(*groups, request);
          if (failed(r))
            return failure();
          printGroups(*r, o.format, os);
          if (limit)
            for (const report::GroupReport &g : *r)
              if (failed(checkPeaks(module, g.report, *limit, o.failIfOver,
                                    g.name + " group ")))
                overLimit = true;
          return success();
        }
        FailureOr<sym::Bindings> b = getEffectiveBindings(module);
        if (failed(b))
          return failure();
        FailureOr<report::Report> r = report::buildReport(module, *b, request);
        if (failed(r))
          return failure();
        if (!o.traces.empty() && failed(addReplay(module, *r, o.traces)))
          return failure();
        if (!o.requests.empty() && failed(addRequests(module, *b, *r)))
          return failure();
        printReport(*r, o.format, os);
        // The report is written either way; the tool then fails.
        if (limit && failed(checkPeaks(module, *r, *limit, o.failIfOver, "")))
          overLimit = true;
        return success();
      },
      [](DialectRegistry &registry) {
        registry.insert<StageDialect, func::FuncDialect>();
      });
}
