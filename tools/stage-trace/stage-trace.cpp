//===- stage-trace.cpp - Checks and statistics of Chakra trace sets -------===//
//
//   stage-trace verify DIR [--prefix=workload] [--jobs=N]
//   stage-trace stats DIR  [--prefix=workload]
//   stage-trace show DIR --rank=R [--format=text|json] [--node=ID]
//   stage-trace timeline DIR [--ranks=0,8,...] [--device=h100] [-o FILE]
//
// A set is what its manifest <prefix>.manifest.json names, every file
// matching it (docs/Safety.md). Any other generator's traces, with
// --without-manifest: <prefix>.<rank>.et for every rank and the
// communicator groups in <prefix>.json (or --groups=FILE).
//
//===----------------------------------------------------------------------===//

#include "Stage/Target/ChakraVerify/Show.h"
#include "Stage/Target/ChakraVerify/Timeline.h"
#include "Stage/Target/ChakraVerify/Verifier.h"
#include "Stage/Support/ByteSize.h"
#include "Stage/Support/DeviceProfile.h"
#include "Stage/Tools/ToolSetup.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::OptionCategory category("stage-trace options");
static cl::opt<std::string> command(cl::Positional,
                                    cl::desc("<verify|stats|show|timeline>"),
                                    cl::cat(category));
static cl::opt<std::string>
    directory(cl::Positional, cl::desc("<trace directory>"), cl::cat(category));
static cl::opt<std::string> prefix("prefix",
                                   cl::desc("Trace files are <prefix>.<rank>.et"),
                                   cl::init("workload"), cl::cat(category));
static cl::opt<std::string>
    groups("groups",
           cl::desc("With --without-manifest: the communicator groups file "
                    "(default <dir>/<prefix>.json)"),
           cl::cat(category));
static cl::opt<bool> withoutManifest(
    "without-manifest",
    cl::desc("Read a set that has no manifest (another generator's): its "
             "files found by name"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> maxFileBytes(
    "max-trace-bytes-per-rank",
    cl::desc("Refuse to read a file larger than this (as the emitter's "
             "limit)"),
    cl::init("4GiB"), cl::cat(category));
// LLVM's libraries already register `threads`.
static cl::opt<unsigned> jobs("jobs", cl::desc("Threads (0: all cores)"),
                              cl::init(0), cl::cat(category));
static cl::opt<int64_t> rank("rank", cl::desc("show: the rank to print"),
                             cl::init(-1), cl::cat(category));
static cl::opt<std::string> format("format",
                                   cl::desc("show: text (default) or json"),
                                   cl::init("text"), cl::cat(category));
static cl::opt<int64_t> node("node",
                             cl::desc("show: only this node id, with the "
                                      "nodes that wait for it"),
                             cl::init(-1), cl::cat(category));
static cl::opt<std::string>
    ranks("ranks",
          cl::desc("timeline: the ranks whose events to write, as 0,8,16 "
                   "(default 0)"),
          cl::init("0"), cl::cat(category));
static cl::opt<std::string> device("device",
                                   cl::desc("timeline: the roofline device "
                                            "for nodes without a duration"),
                                   cl::init("h100"), cl::cat(category));
static cl::opt<std::string> output("o", cl::desc("timeline: output file"),
                                   cl::init("-"), cl::cat(category));
static cl::alias jobsShort("j", cl::desc("Alias for --jobs"),
                           cl::aliasopt(jobs), cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::stage::setBugReportMessage();
  mlir::stage::handleOutputErrors(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "stage-trace: check Chakra execution trace sets\n");
  if (command.empty() || directory.empty()) {
    llvm::errs() << "error: "
                 << (command.empty() ? std::string("a command")
                                     : "stage-trace " + command + " needs")
                 << (command.empty() ? " and a trace directory are needed"
                                     : " a trace directory")
                 << ": stage-trace <verify|stats|show|timeline> DIR "
                    "(--help lists the options)\n";
    return 1;
  }
  stage::trace::TraceSetOptions o;
  o.dir = directory;
  o.prefix = prefix;
  o.groups = groups;
  o.threads = jobs;
  o.withoutManifest = withoutManifest;
  std::optional<double> limit = stage::parseByteSize(maxFileBytes);
  if (!limit || *limit < 1) {
    llvm::errs() << "error: --max-trace-bytes-per-rank=" << maxFileBytes
                 << ": expected a size, as in 4GiB\n";
    return 1;
  }
  o.maxFileBytes = uint64_t(*limit);
  if (command == "verify") {
    stage::trace::VerifyResult r = stage::trace::verifyTraceSet(o);
    for (const std::string &e : r.errors)
      llvm::errs() << "error: " << e << "\n";
    if (r.truncated)
      llvm::errs() << "error: (more errors not shown)\n";
    if (!r.errors.empty())
      return 1;
    llvm::outs() << "verified " << r.ranks << " ranks, " << r.nodes
                 << " nodes: every dependency exists and is acyclic, every "
                    "receive has its send, every group issues one sequence of "
                    "collectives, and the set runs to completion\n";
    return 0;
  }
  if (command == "stats") {
    std::string error;
    std::string json = stage::trace::traceSetStats(o, error);
    if (!error.empty()) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
    llvm::outs() << json;
    return 0;
  }
  if (command == "show") {
    if (rank < 0) {
      llvm::errs() << "error: show needs --rank=R\n";
      return 1;
    }
    if (format != "text" && format != "json") {
      llvm::errs() << "error: --format=" << format
                   << ": expected text or json\n";
      return 1;
    }
    stage::trace::ShowOptions s;
    s.rank = rank;
    s.json = format == "json";
    if (node >= 0)
      s.node = uint64_t(node);
    std::string error = stage::trace::showRank(o, s, llvm::outs());
    if (!error.empty()) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
    return 0;
  }
  if (command == "timeline") {
    std::optional<stage::DeviceProfile> d = stage::getShippedProfile(device);
    if (!d) {
      llvm::errs() << "error: --device=" << device
                   << ": unknown device; profiles: "
                   << stage::getShippedProfileNames() << "\n";
      return 1;
    }
    stage::trace::TimelineOptions t;
    t.device = *d;
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(ranks).split(parts, ',', -1, false);
    for (llvm::StringRef p : parts) {
      int64_t r;
      if (p.trim().getAsInteger(10, r) || r < 0) {
        llvm::errs() << "error: --ranks=" << ranks
                     << ": expected rank numbers separated by commas, as in "
                        "0,8,16\n";
        return 1;
      }
      t.ranks.push_back(r);
    }
    std::string buffer;
    llvm::raw_string_ostream os(buffer);
    if (std::string error = stage::trace::writeTimeline(o, t, os);
        !error.empty()) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
    std::error_code ec;
    llvm::ToolOutputFile out(output, ec, llvm::sys::fs::OF_None);
    if (ec) {
      llvm::errs() << "error: cannot write " << output << ": " << ec.message()
                   << "\n";
      return 1;
    }
    out.os() << buffer;
    return mlir::stage::keepOutput(out, output) ? 0 : 1;
  }
  llvm::errs() << "error: unknown command '" << command
               << "'; expected verify, stats, show or timeline\n";
  return 1;
}
