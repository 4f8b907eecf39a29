//===- stage-trace.cpp - Checks and statistics of Chakra trace sets -------===//
//
//   stage-trace verify DIR [--prefix=workload] [--groups=FILE] [--jobs=N]
//   stage-trace stats DIR  [--prefix=workload] [--groups=FILE]
//
// Works on any generator's traces: <prefix>.<rank>.et for every rank and the
// communicator groups in <prefix>.json.
//
//===----------------------------------------------------------------------===//

#include "Stage/Target/ChakraVerify/Verifier.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::OptionCategory category("stage-trace options");
static cl::opt<std::string> command(cl::Positional, cl::Required,
                                    cl::desc("<verify|stats>"), cl::cat(category));
static cl::opt<std::string> directory(cl::Positional, cl::Required,
                                      cl::desc("<trace directory>"),
                                      cl::cat(category));
static cl::opt<std::string> prefix("prefix",
                                   cl::desc("Trace files are <prefix>.<rank>.et"),
                                   cl::init("workload"), cl::cat(category));
static cl::opt<std::string> groups(
    "groups", cl::desc("Communicator groups file (default <dir>/<prefix>.json)"),
    cl::cat(category));
// LLVM's libraries already register `threads`.
static cl::opt<unsigned> jobs("jobs", cl::desc("Threads (0: all cores)"),
                              cl::init(0), cl::cat(category));
static cl::alias jobsShort("j", cl::desc("Alias for --jobs"),
                           cl::aliasopt(jobs), cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "stage-trace: check Chakra execution trace sets\n");
  stage::trace::TraceSetOptions o;
  o.dir = directory;
  o.prefix = prefix;
  o.groups = groups;
  o.threads = jobs;
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
  llvm::errs() << "error: unknown command '" << command
               << "'; expected verify or stats\n";
  return 1;
}
