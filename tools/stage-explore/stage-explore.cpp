//===- stage-explore.cpp - The best parallelization plans of a model ------===//
//
//   stage-explore model.mlir --gpus=N [--device=h100] [--gpus-per-node=8]
//       [--network=FILE.json] [--global-batch=B]
//       [--seq=S] [--top=K] [--constraints="tp<=8 pp>=2"]
//       [--format=md|json|csv|html] [-o FILE] [--emit-best=DIR]
//       [--mode=train|infer] [--decode-tokens=N] [--max-tpot=MS]
//
// Every plan of the model on exactly N GPUs, compiled once per shape and
// evaluated with the report's memory and time (docs/Explore.md); training
// plans by iteration time, serving plans by decode tokens/s per GPU.
//
//===----------------------------------------------------------------------===//

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Explore/SearchFormat.h"
#include "Stage/Explore/Sweep.h"
#include "Stage/InitAll.h"
#include "Stage/Target/Chakra/ChakraTranslation.h"
#include "Stage/Target/TargetOptions.h"
#include "Stage/Support/SafeFiles.h"
#include "Stage/Tools/ToolSetup.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>
#include <cmath>

using namespace mlir;
using namespace mlir::stage;
namespace cl = llvm::cl;

static cl::OptionCategory category("stage-explore options");
static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model.mlir>"), cl::cat(category));
static cl::opt<int64_t> gpus("gpus", cl::desc("GPUs of every plan"),
                             cl::init(0), cl::cat(category));
static cl::opt<std::string>
    deviceName("device",
               cl::desc("Device profile shipped with stage (a100-40gb, "
                        "a100-80gb, b200, h100, h200, h800, mi300x)"),
               cl::init("h100"), cl::cat(category));
static cl::opt<std::string> deviceProfile(
    "device-profile",
    cl::desc("A device profile of your own (JSON, as profiles/*.json)"),
    cl::cat(category));
static cl::opt<std::string>
    deviceMemory("device-memory",
                 cl::desc("Override: device memory, as in 80GB"),
                 cl::cat(category));
static cl::opt<int64_t> gpusPerNode(
    "gpus-per-node",
    cl::desc("Devices per node, on the scale-up links (default: the "
             "device's, 8)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> network(
    "network",
    cl::desc("A JSON file of gpus_per_node, link_bandwidth, "
             "network_bandwidth (bytes/s per direction) and latency (s)"),
    cl::cat(category));
static cl::opt<int64_t>
    globalBatch("global-batch",
                cl::desc("Sequences per iteration (default: the model's B)"),
                cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    seq("seq", cl::desc("Sequence length (default: the model's S)"),
        cl::init(0), cl::cat(category));
static cl::opt<int64_t> top("top", cl::desc("Plans to print"), cl::init(10),
                            cl::cat(category));
static cl::opt<std::string>
    mode("mode",
         cl::desc("train (default): training plans by iteration time; infer: "
                  "serving plans by decode tokens/s per GPU"),
         cl::init("train"), cl::cat(category));
static cl::opt<int64_t> decodeTokens(
    "decode-tokens",
    cl::desc("--mode=infer: tokens each request decodes (default 128)"),
    cl::init(128), cl::cat(category));
static cl::opt<double> maxTpot(
    "max-tpot",
    cl::desc("--mode=infer: the longest time per output token allowed, in "
             "milliseconds (0: no bound)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> requests(
    "requests",
    cl::desc("--mode=infer: serve this request workload (a JSON-lines or "
             "CSV file, or a stream as in poisson:rate=4,count=1000,"
             "prompt=512,output=128) with continuous batching, and rank "
             "plans by goodput per GPU under --slo"),
    cl::cat(category));
static cl::opt<std::string> slo(
    "slo",
    cl::desc("--requests: the bounds goodput counts, as in "
             "ttft:1,tpot:50ms,attainment:0.9"),
    cl::cat(category));
static cl::opt<std::string> scheduler(
    "scheduler",
    cl::desc("--requests: scheduler settings kept in every plan, as in "
             "max-running=256,block=16,memory-utilization=0.9 (and "
             "max-batched-tokens, which is otherwise searched)"),
    cl::cat(category));
static cl::opt<std::string> constraints(
    "constraints",
    cl::desc("Bounds on the plans, as \"tp<=8 pp>=2 zero!=3 M=16\" (fields "
             "dp tp pp cp ep M v zero B)"),
    cl::cat(category));
static cl::opt<std::string> format("format",
                                   cl::desc("md (default), json, csv or html"),
                                   cl::init("md"), cl::cat(category));
static cl::opt<std::string> output("o", cl::desc("Output file"), cl::init("-"),
                                   cl::cat(category));
static cl::opt<std::string> emitBest(
    "emit-best",
    cl::desc("Write the best plan's step (step.mlir) and traces (traces/) "
             "to this directory"),
    cl::cat(category));
static cl::opt<unsigned> jobs("jobs",
                              cl::desc("Shapes compiled at once (0: one per "
                                       "core)"),
                              cl::init(0), cl::cat(category));
static cl::opt<bool> exhaustive(
    "exhaustive",
    cl::desc("Evaluate every plan that may fit (the default also skips the "
             "training plans a lower bound of their iteration keeps out of "
             "the top K; the HTML chart always shows every plan that fits)"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("No progress line"),
                           cl::init(false), cl::cat(category));
static cl::opt<std::string> sweep(
    "sweep",
    cl::desc("KEY=FROM:TO:STEPS: the search at each of STEPS values of the "
             "device profile's number KEY (as network_bandwidth=25e9:100e9:4); "
             "the best plan and its time at each"),
    cl::cat(category));

/// One line on stderr, `error: ...`, and a failing exit.
static int fail(const llvm::Twine &message) {
  llvm::errs() << "stage-explore: error: " << message << "\n";
  return 1;
}

static std::string getModelName(ModuleOp m) {
  if (auto model = m->getAttrOfType<DictionaryAttr>("stage.model"))
    if (auto arch = model.getAs<StringAttr>("architecture"))
      return arch.str();
  return llvm::sys::path::filename(input).str();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::stage::setBugReportMessage();
  mlir::stage::handleOutputErrors(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv, "stage-explore: the best parallelization plans of a model\n");
  auto start = std::chrono::steady_clock::now();

  if (gpus < 1)
    return fail("--gpus=N is required, N at least 1");
  if (top < 1)
    return fail("--top=K needs K at least 1");
  if (format != "md" && format != "json" && format != "csv" && format != "html")
    return fail("--format=" + format + ": expected md, json, csv or html");
  if (mode != "train" && mode != "infer")
    return fail("--mode=" + mode + ": expected train or infer");
  if (decodeTokens < 1)
    return fail("--decode-tokens=N needs N at least 1");
  if (maxTpot < 0 || !std::isfinite(maxTpot))
    return fail("--max-tpot needs a time in milliseconds, 0 or more");
  explore::SearchRequest request;
  request.gpus = gpus;
  request.serving = mode == "infer";
  request.decodeTokens = decodeTokens;
  request.maxTpotSeconds = maxTpot / 1e3;
  request.threads = jobs;
  // The chart's Pareto front needs every plan.
  request.exactTop = exhaustive || format == "html" ? 0 : int64_t(top);
  std::optional<DeviceModel> device;
  if (!deviceProfile.empty()) {
    std::string error;
    std::unique_ptr<llvm::MemoryBuffer> text =
        ::stage::files::readRegularFile(deviceProfile, uint64_t(256) << 20,
                                        error);
    if (!text)
      return fail("--device-profile: " + error);
    device = DeviceModel::parse(text->getBuffer(),
                                llvm::sys::path::stem(deviceProfile), error);
    if (!device)
      return fail(deviceProfile + ": " + error);
  } else {
    device = getDevicePreset(deviceName);
    if (!device)
      return fail("--device=" + deviceName +
                  ": unknown device; profiles: " + getDevicePresetNames() +
                  " (or --device-profile=FILE)");
  }
  if (!deviceMemory.empty()) {
    std::optional<double> bytes = parseByteSize(deviceMemory);
    if (!bytes || *bytes <= 0)
      return fail("--device-memory=" + deviceMemory +
                  ": expected a size, as in 80GB");
    device->memoryCapacity = *bytes;
    device->overridden.push_back("device-memory");
  }
  if (!network.empty()) {
    std::string error = applyNetworkFile(network, *device);
    if (!error.empty())
      return fail(error);
    device->overridden.push_back("network");
  }
  if (gpusPerNode < 0)
    return fail("--gpus-per-node must be positive");
  if (gpusPerNode) {
    device->gpusPerNode = gpusPerNode;
    device->overridden.push_back("gpus-per-node");
  }
  request.device = *device;
  if (globalBatch < 0 || seq < 0)
    return fail("--global-batch and --seq must be positive");
  if (globalBatch)
    request.batch = int64_t(globalBatch);
  if (seq)
    request.seq = int64_t(seq);
  std::string error;
  std::optional<std::vector<explore::Constraint>> parsed =
      explore::parseConstraints(constraints, error);
  if (!parsed)
    return fail("--constraints: " + error);
  request.constraints = *parsed;

  DialectRegistry registry;
  registerAllDialects(registry);
  // Shapes compile on several threads: the context stays thread-safe.
  MLIRContext ctx(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &ctx);
  std::string openError;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(input, &openError);
  if (!file)
    return fail(openError);
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> model = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!model)
    return 1;

  // The request as the outputs head it; called once the model compiled, so
  // its bindings are integers.
  auto describeRequest = [&] {
    explore::SearchTitle title;
    title.model = getModelName(*model);
    title.gpus = gpus;
    title.device = request.device;
    title.top = top;
    title.serving = request.serving;
    title.decodeTokens = request.decodeTokens;
    title.maxTpotSeconds = request.maxTpotSeconds;
    FailureOr<sym::Bindings> b = getModuleBindings(*model);
    title.batch =
        request.batch ? *request.batch : (b->count("B") ? b->at("B") : 1);
    title.seq = request.seq ? *request.seq : (b->count("S") ? b->at("S") : 1);
    return title;
  };

  if (!sweep.empty()) {
    if (!emitBest.empty())
      return fail("--sweep and --emit-best: a sweep has a best plan per point; "
                  "emit one with --device and the point's override");
    std::string error;
    std::optional<explore::SweepRange> range =
        explore::parseSweep(sweep, request.device, error);
    if (!range)
      return fail("--sweep=" + sweep + ": " + error);
    FailureOr<std::vector<explore::SweepPoint>> points =
        explore::sweepPlans(*model, request, *range);
    if (failed(points))
      return 1;
    std::string outputError;
    auto out = openOutputFile(output, &outputError);
    if (!out)
      return fail(outputError);
    explore::printSweep(*points, *range, describeRequest(), format, out->os());
    return mlir::stage::keepOutput(*out, output) ? 0 : 1;
  }

  if (requests.empty() && (!slo.empty() || !scheduler.empty()))
    return fail("--slo and --scheduler apply to a request stream: add "
                "--requests");
  if (!requests.empty()) {
    if (!request.serving)
      return fail("--requests is a serving workload: add --mode=infer");
    if (maxTpot > 0 || !constraints.empty() || !emitBest.empty() ||
        format == "html")
      return fail("--requests: --max-tpot, --constraints, --emit-best and "
                  "--format=html do not apply to a request-stream search yet");
    explore::StreamSearchRequest sr;
    sr.gpus = gpus;
    sr.device = request.device;
    sr.stream.workload = requests;
    sr.stream.slo = slo;
    sr.stream.scheduler = scheduler;
    FailureOr<explore::StreamSearchResult> result =
        explore::searchStreams(*model, sr);
    if (failed(result))
      return 1;
    if (result->ranked.empty()) {
      std::string why;
      for (const auto &[reason, n] : result->excluded)
        why += (why.empty() ? "" : "; ") + reason + " (" + std::to_string(n) +
               ")";
      return fail("no serving plan of " + getModelName(*model) + " on " +
                  std::to_string(gpus) + " GPUs serves the stream" +
                  (why.empty() ? std::string() : ": " + why));
    }
    explore::SearchTitle title = describeRequest();
    title.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::string outputError;
    auto out = openOutputFile(output, &outputError);
    if (!out)
      return fail(outputError);
    explore::printStreamSearch(*result, title, format, out->os());
    return mlir::stage::keepOutput(*out, output) ? 0 : 1;
  }

  auto progress = [&](const explore::SearchProgress &p) {
    static auto last = std::chrono::steady_clock::now();
    auto now = std::chrono::steady_clock::now();
    if (quiet || std::chrono::duration<double>(now - last).count() < 2)
      return;
    last = now;
    llvm::errs() << "stage-explore: " << p.shapesDone << "/" << p.shapes
                 << " shapes, " << p.evaluated << " plans evaluated, "
                 << p.fitting << " fit\n";
  };
  FailureOr<explore::SearchResult> result =
      explore::searchPlans(*model, request, progress);
  if (failed(result))
    return 1;

  explore::SearchTitle title = describeRequest();
  title.wallSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  if (result->enumerated == 0 ||
      (result->evaluated == 0 && result->statesBoundOver == 0 &&
       result->peakBoundOver == 0)) {
    std::string why;
    for (const auto &[reason, n] : result->excluded)
      why +=
          (why.empty() ? "" : "; ") + reason + " (" + std::to_string(n) + ")";
    return fail("no plan of " + title.model + " runs on " +
                std::to_string(gpus) + " GPUs" +
                (why.empty() ? std::string() : ": " + why));
  }
  if (result->ranked.empty() && result->overLatency) {
    char ms[32];
    snprintf(ms, sizeof(ms), "%.3f", result->smallestTpotOver * 1e3);
    return fail("no serving plan of " + title.model + " on " +
                std::to_string(gpus) + " GPUs meets --max-tpot=" +
                std::to_string(maxTpot.getValue()).substr(0, 8) +
                " ms: the shortest time per output token of the " +
                std::to_string(result->overLatency) + " plans that fit is " +
                ms + " ms");
  }
  if (result->ranked.empty()) {
    int64_t smallest = result->smallestPeakOver;
    for (int64_t bound :
         {result->smallestBoundOver, result->smallestPeakBoundOver})
      if (!result->smallestPeakOver && bound && (!smallest || bound < smallest))
        smallest = bound;
    return fail("none of the " + std::to_string(result->enumerated) +
                " plans of " + title.model + " on " + std::to_string(gpus) +
                " GPUs fits the " +
                std::to_string(int64_t(request.device.memoryCapacity) >> 20) +
                " MiB of " + request.device.name + ": the smallest peak is " +
                (result->smallestPeakOver ? "" : "at least ") +
                std::to_string(smallest >> 20) + " MiB (" +
                std::to_string(result->statesOver + result->statesBoundOver) +
                " plans exceed it by their model states alone)");
  }

  std::string outputError;
  auto out = openOutputFile(output, &outputError);
  if (!out)
    return fail(outputError);
  if (format == "json" || format == "csv") {
    // The summary goes to stderr: the output stays one JSON value or table.
    if (!quiet)
      llvm::errs() << explore::describeSearch(*result, title);
    if (format == "json")
      explore::printSearchJson(*result, title, out->os());
    else
      explore::printSearchCsv(*result, title, out->os());
  } else if (format == "html") {
    explore::printSearchHtml(*result, title, out->os());
  } else {
    explore::printSearchMarkdown(*result, title, out->os());
  }

  if (!emitBest.empty()) {
    const explore::Plan &best = result->ranked.front().plan;
    FailureOr<OwningOpRef<ModuleOp>> step =
        explore::compilePlan(*model, request, best);
    if (failed(step))
      return 1;
    if (std::error_code ec = llvm::sys::fs::create_directories(emitBest))
      return fail("--emit-best=" + emitBest + ": " + ec.message());
    llvm::SmallString<256> stepPath(emitBest), tracesDir(emitBest);
    llvm::sys::path::append(stepPath, "step.mlir");
    llvm::sys::path::append(tracesDir, "traces");
    auto stepFile = openOutputFile(stepPath, &outputError);
    if (!stepFile)
      return fail(outputError);
    (*step)->print(stepFile->os());
    stepFile->os() << "\n"; // as stage-opt ends its output
    FailureOr<int64_t> ranks = writeTraces(**step, tracesDir);
    if (failed(ranks) || !mlir::stage::keepOutput(*stepFile, stepPath))
      return 1;
    llvm::errs() << "stage-explore: the best plan (" << best.options()
                 << "): " << stepPath << " and " << *ranks << " rank traces in "
                 << tracesDir << "\n";
  }
  return mlir::stage::keepOutput(*out, output) ? 0 : 1;
}
