//===- ChakraTranslation.cpp - --stage-to-chakra --------------------------===//

#include "Stage/Target/Chakra/ChakraTranslation.h"

#include "ProtoJson.h"
#include "TraceSetWriter.h"
#include "Workload.h"
#include "WorkloadCheck.h"

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Analysis/DeviceModel.h"
#include "Stage/Analysis/RankClasses.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Target/TargetOptions.h"

#include "llvm/ADT/StringExtras.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

namespace {
struct ChakraOptions {
  llvm::cl::opt<std::string> dir{
      "output-dir", llvm::cl::desc("--stage-to-chakra: directory of the traces")};
  llvm::cl::opt<std::string> name{
      "output-name",
      llvm::cl::desc("--stage-to-chakra: file name of rank %d's trace"),
      llvm::cl::init("workload.%d.et")};
  llvm::cl::opt<std::string> ranks{
      "ranks",
      llvm::cl::desc("--stage-to-chakra: write ranks A:B only (A included, B "
                     "excluded); the files are those of a full run")};
  llvm::cl::opt<bool> encodeOnly{
      "encode-only",
      llvm::cl::desc("--stage-to-chakra: encode every trace, write none (measuring)"),
      llvm::cl::init(false)};
  llvm::cl::opt<std::string> gradBucket{
      "grad-bucket",
      llvm::cl::desc("--stage-to-chakra: reduce gradients in buckets of at "
                     "least this size, as PyTorch DDP (0: one collective per "
                     "gradient and layer)"),
      llvm::cl::init("25MiB")};
  llvm::cl::opt<bool> ioInfo{
      "io-info",
      llvm::cl::desc("--stage-to-chakra: give every node the inputs and "
                     "outputs (tensor, bytes) ASTRA-sim's memory tracker "
                     "reads (off: about three times the bytes)"),
      llvm::cl::init(false)};
  llvm::cl::opt<double> maxOps{
      "max-ops-per-rank",
      llvm::cl::desc("--stage-to-chakra: refuse a step whose ranks execute "
                     "more ops than this (about their trace nodes), before "
                     "building any trace"),
      llvm::cl::init(TraceOptions::kDefaultMaxOpsPerRank)};
  llvm::cl::opt<std::string> maxTraceBytes{
      "max-trace-bytes",
      llvm::cl::desc("--stage-to-chakra: refuse a trace set larger than this "
                     "in all (sized from a few ranks encoded first), before "
                     "writing any file"),
      llvm::cl::init("1TiB")};
  llvm::cl::opt<std::string> maxTraceBytesPerRank{
      "max-trace-bytes-per-rank",
      llvm::cl::desc("--stage-to-chakra: refuse a trace set whose largest "
                     "file is larger than this, before writing any file"),
      llvm::cl::init("4GiB")};
  llvm::cl::opt<int64_t> rank{
      "rank",
      llvm::cl::desc("--stage-to-chakra: print rank R's trace as JSON lines "
                     "(decoded with protobuf) instead of writing files"),
      llvm::cl::init(-1)};
};
} // namespace

static ChakraOptions &chakraOptions() {
  static ChakraOptions options;
  return options;
}

/// `--threads=N`: LLVM already registers an option of that name, so the
/// tool's main reads it and passes it here.
static unsigned traceThreads = 0;
void mlir::stage::setTraceThreads(unsigned n) { traceThreads = n; }

static LogicalResult parseRanks(Location loc, StringRef text, int64_t &first,
                                int64_t &last) {
  auto [a, b] = text.split(':');
  if (a.getAsInteger(10, first) || b.getAsInteger(10, last))
    return emitError(loc) << "--ranks=" << text << ": expected A:B, as in 0:4096";
  return success();
}

/// One rank per GPU: `8 GPUs = pp=2 x dp=2 x tp=2 (ranks numbered with tp
/// fastest)`, with how stage's ep relates to Megatron-LM's data parallelism.
static std::string describeGrid(const Workload &w) {
  std::string text;
  llvm::raw_string_ostream os(text);
  int64_t gpus = 1, dp = 1, ep = 1;
  SmallVector<std::string> split;
  for (auto [axis, degree] : llvm::zip(w.axes, w.degrees)) {
    gpus *= degree;
    dp = axis == "dp" ? degree : dp;
    ep = axis == "ep" ? degree : ep;
    if (degree > 1)
      split.push_back(axis + "=" + std::to_string(degree));
  }
  os << gpus << " GPUs = " << (split.empty() ? "1" : llvm::join(split, " x "))
     << " (ranks numbered with " << w.axes.back() << " fastest)";
  if (ep > 1)
    os << "; ep is a grid axis of its own: in Megatron-LM terms the "
          "data-parallel size is dp x ep = "
       << dp * ep << " with expert-model-parallel size " << ep;
  return text;
}

/// The checked workload of a program module: a whole run, or one rank
/// group of a disaggregated one.
/// Refuses, before anything is built, a program whose rank classes run
/// more ops per step than `limit` (a trace has about one node per op run):
/// `--bind=L=1000000000` would otherwise exhaust the memory.
static LogicalResult checkTraceSize(ModuleOp module, const sym::Bindings &b,
                                    double limit) {
  double largest = 0;
  std::string why;
  module.walk([&](func::FuncOp fn) {
    std::shared_ptr<const StepStructure> structure = getStepStructure(fn);
    for (const RankClass &cls : structure->classes) {
      double ops = 0;
      for (Operation *chunk : cls.chunks)
        walkWithCounts(chunk, [&](Operation *op, const Multiplicity &n) {
          if (!isa<CostOpInterface, CollectiveOpInterface>(op))
            return;
          sym::Result<double> runs = n.countUnder(b);
          if (runs)
            ops += *runs;
          else if (why.empty())
            why = runs.error();
        });
      largest = std::max(largest, ops);
    }
  });
  if (!why.empty())
    return module.emitError("trace size: ") << why;
  if (largest <= limit)
    return success();
  auto number = [](double x) {
    std::string s;
    llvm::raw_string_ostream(s) << llvm::format("%.3g", x);
    return s;
  };
  return module.emitError("the traces would have about ")
         << number(largest) << " nodes per rank, more than the limit of "
         << number(limit)
         << " (--max-ops-per-rank); a smaller binding (layers, micro-batches, "
            "decode steps) or a larger limit";
}

static FailureOr<Workload> buildCheckedWorkload(ModuleOp module,
                                                const TraceOptions &o) {
  FailureOr<sym::Bindings> b = getEffectiveBindings(module);
  if (failed(b) || failed(checkTraceSize(module, *b, o.maxOpsPerRank)))
    return failure();
  FailureOr<Workload> w = buildWorkload(module, *b, o.device, o.bucketBytes,
                                       o.ioInfo, o.servingSteps);
  if (failed(w) || failed(checkWorkload(*w, module.getLoc())))
    return failure();
  return w;
}

static FailureOr<TraceSet> buildTraceSet(ModuleOp module,
                                         const TraceOptions &o) {
  if (std::optional<ServingGroups> groups = getServingGroups(module)) {
    FailureOr<Workload> prefill = buildCheckedWorkload(groups->prefill, o);
    if (failed(prefill))
      return failure();
    FailureOr<Workload> decode = buildCheckedWorkload(groups->decode, o);
    if (failed(decode))
      return failure();
    return TraceSet::disaggregated(std::move(*prefill), std::move(*decode),
                                   module.getLoc());
  }
  FailureOr<Workload> w = buildCheckedWorkload(module, o);
  if (failed(w))
    return failure();
  return TraceSet(std::move(*w));
}

/// The ASTRA-sim configuration of the cluster the set is priced for: a
/// system that replays the traces' durations (roofline off) with ring
/// collectives on every level, and the network: one switch per node over
/// the scale-up links, one across nodes, at the profile's achieved
/// bandwidths (GiB/s, the analytical backend's unit) and latencies (ns).
static std::vector<std::pair<std::string, std::string>>
simulatorConfig(const DeviceModel &d, int64_t ranks, llvm::StringRef stem) {
  int64_t perNode = std::max<int64_t>(d.gpusPerNode, 1);
  bool twoLevels = ranks > perNode && ranks % perNode == 0;
  auto gib = [](double bytes) {
    std::string s;
    llvm::raw_string_ostream(s) << llvm::format("%.4f", bytes / double(1 << 30));
    return s;
  };
  auto ns = [](double seconds) {
    std::string s;
    llvm::raw_string_ostream(s) << llvm::format("%.1f", seconds * 1e9);
    return s;
  };
  std::string levels = twoLevels ? "\"ring\", \"ring\"" : "\"ring\"";
  std::string a2a = d.ringAllToAll ? levels
                                   : (twoLevels ? "\"direct\", \"direct\""
                                                : "\"direct\"");
  std::string system;
  llvm::raw_string_ostream sys(system);
  sys << "{\n"
      << "  \"scheduling-policy\": \"LIFO\",\n"
      << "  \"endpoint-delay\": 10,\n"
      << "  \"active-chunks-per-dimension\": 1,\n"
      << "  \"preferred-dataset-splits\": 4,\n"
      << "  \"all-reduce-implementation\": [" << levels << "],\n"
      << "  \"all-gather-implementation\": [" << levels << "],\n"
      << "  \"reduce-scatter-implementation\": [" << levels << "],\n"
      << "  \"all-to-all-implementation\": [" << a2a << "],\n"
      << "  \"collective-optimization\": \"localBWAware\",\n"
      << "  \"local-mem-bw\": "
      << llvm::format("%.1f", d.memoryBytes * d.memoryEfficiency / 1e9) << ",\n"
      << "  \"boost-mode\": 0,\n"
      << "  \"roofline-enabled\": 0,\n"
      << "  \"peak-perf\": "
      << llvm::format("%.1f", d.matmulFlops * d.matmulEfficiency / 1e12) << "\n"
      << "}\n";
  std::string network;
  llvm::raw_string_ostream net(network);
  std::string link = gib(d.linkBytes * d.linkEfficiency),
              across = gib(d.networkBytes * d.networkEfficiency);
  if (twoLevels)
    net << "topology: [ Switch, Switch ]\n"
        << "npus_count: [ " << perNode << ", " << ranks / perNode << " ]\n"
        << "bandwidth: [ " << link << ", " << across << " ]\n"
        << "latency: [ " << ns(d.latency) << ", " << ns(d.networkLatency)
        << " ]\n";
  else
    net << "topology: [ Switch ]\n"
        << "npus_count: [ " << ranks << " ]\n"
        << "bandwidth: [ " << (ranks > perNode ? across : link) << " ]\n"
        << "latency: [ "
        << ns(ranks > perNode ? d.networkLatency : d.latency) << " ]\n";
  return {{(stem + ".astra-system.json").str(), system},
          {(stem + ".astra-network.yml").str(), network}};
}

/// The grid of each rank group, and what the KV handoff moves.
static std::string describeSet(const TraceSet &set) {
  SmallVector<const Workload *> groups = set.getWorkloads();
  if (groups.size() == 1)
    return describeGrid(*groups[0]);
  std::string text;
  llvm::raw_string_ostream os(text);
  int64_t first = 0;
  for (auto [name, w] : llvm::zip(SmallVector<StringRef>{ServingGroups::kPrefillGroup,
                                                         ServingGroups::kDecodeGroup},
                                  groups)) {
    int64_t n = w->getNumRanks();
    os << name << " ranks " << first << ".." << first + n - 1 << ": "
       << describeGrid(*w) << "\n";
    first += n;
  }
  const KVHandoff *h = set.getHandoff();
  os << "KV handoff: " << h->getNumMessages() << " messages, "
     << h->getTotalBytes() << " bytes";
  return text;
}

static LogicalResult emitTraces(Operation *op, raw_ostream &os) {
  reportLocationsOnly(op->getContext());
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return op->emitError("expected a module");
  const ChakraOptions &o = chakraOptions();
  uint64_t bucketBytes = 0;
  if (StringRef(o.gradBucket).trim() != "0") {
    std::optional<double> size = parseByteSize(o.gradBucket);
    if (!size)
      return emitOptionError(module) << "--grad-bucket=" << o.gradBucket
                                     << ": expected a size, as in 25MiB, or 0";
    bucketBytes = uint64_t(*size);
  }
  // With a device, nodes also carry roofline durations (duration_micros).
  FailureOr<std::optional<DeviceModel>> device = getDeviceModel(module, "");
  if (failed(device))
    return failure();
  TraceOptions to;
  to.bucketBytes = bucketBytes;
  to.ioInfo = o.ioInfo;
  to.device = *device ? &**device : nullptr;
  to.maxOpsPerRank = o.maxOps;
  FailureOr<TraceSet> set = buildTraceSet(module, to);
  if (failed(set))
    return failure();
  int64_t numRanks = set->getNumRanks();

  if (o.rank >= 0) {
    if (o.rank >= numRanks)
      return emitOptionError(module)
             << "--rank=" << int64_t(o.rank) << " is not one of the "
             << numRanks << " ranks";
    std::string bytes;
    set->encodeRank(o.rank, bytes);
    std::string error;
    std::string json = stage_chakra_proto::traceToJson(bytes, error);
    if (!error.empty())
      return module.emitError("the trace does not decode: ") << error;
    os << json;
    return success();
  }

  WriteOptions wo;
  wo.dir = o.dir;
  wo.name = o.name;
  for (auto [text, limit, flag] :
       {std::make_tuple(&o.maxTraceBytes, &wo.maxTotalBytes, "max-trace-bytes"),
        std::make_tuple(&o.maxTraceBytesPerRank, &wo.maxBytesPerRank,
                        "max-trace-bytes-per-rank")}) {
    std::optional<double> bytes = parseByteSize(text->getValue());
    if (!bytes || *bytes <= 0)
      return emitOptionError(module) << "--" << flag << "=" << text->getValue()
                                     << ": expected a size, as in 1TiB";
    *limit = *bytes;
  }
  wo.threads = traceThreads;
  wo.encodeOnly = o.encodeOnly;
  // The simulator's view of the cluster the durations were priced for.
  if (*device) {
    std::string groupsName = getGroupsFileName(wo.name);
    llvm::StringRef stem = groupsName;
    stem.consume_back(".json");
    wo.extras = simulatorConfig(**device, numRanks, stem);
  }
  if (wo.dir.empty() && !wo.encodeOnly)
    return emitOptionError(module)
           << "--stage-to-chakra needs --output-dir (or "
              "--encode-only, or --rank)";
  if (!o.ranks.empty() &&
      failed(parseRanks(module.getLoc(), o.ranks, wo.first, wo.last)))
    return failure();
  FailureOr<WriteStats> s = writeTraceSet(*set, wo, module.getLoc());
  if (failed(s))
    return failure();
  if (wo.encodeOnly)
    os << "encoded " << s->ranks << " traces of " << numRanks
       << " ranks: " << s->bytes << " bytes\n";
  else
    os << "wrote " << s->ranks << " traces of " << numRanks
       << " ranks (" << s->bytes << " bytes) and " << s->groupsFile << " to "
       << wo.dir << "\n";
  os << describeSet(*set) << "\n";
  return success();
}

FailureOr<int64_t> mlir::stage::writeTraces(ModuleOp module, StringRef dir,
                                            const TraceOptions &o) {
  FailureOr<TraceSet> set = buildTraceSet(module, o);
  if (failed(set))
    return failure();
  WriteOptions wo;
  wo.dir = dir.str();
  wo.threads = traceThreads;
  FailureOr<WriteStats> s = writeTraceSet(*set, wo, module.getLoc());
  if (failed(s))
    return failure();
  return set->getNumRanks();
}

void mlir::stage::registerToChakraTranslation() {
  (void)chakraOptions();
  registerBindingOption();
  registerDeviceOptions();
  TranslateFromMLIRRegistration reg(
      "stage-to-chakra",
      "One Chakra execution trace per rank and the communicator groups",
      emitTraces, [](DialectRegistry &registry) {
        registry.insert<StageDialect, func::FuncDialect>();
      });
}
