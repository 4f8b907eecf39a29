//===- WorkloadCheck.cpp - What ASTRA-sim needs, checked before writing ---===//

#include "WorkloadCheck.h"

#include "mlir/IR/Diagnostics.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

namespace {
/// A message between stages: (from, to, tag, bytes), as ASTRA-sim matches.
using Message = std::tuple<int64_t, int64_t, int64_t, uint64_t>;

int64_t peerOf(int64_t stage, int64_t shift, int64_t pp) {
  return ((stage + shift) % pp + pp) % pp;
}

std::string describe(const TraceNode &n, int64_t stage, uint32_t id) {
  return ("stage " + Twine(stage) + " node " + Twine(id) + " '" + n.name + "'")
      .str();
}
} // namespace

static LogicalResult checkNodes(const Workload &w, Location loc) {
  int64_t pp = int64_t(w.classes.size());
  for (auto [stage, cls] : llvm::enumerate(w.classes)) {
    for (auto [i, n] : llvm::enumerate(cls.nodes)) {
      auto fail = [&](const Twine &why) {
        return emitError(loc) << describe(n, stage, i) << ": " << why;
      };
      for (uint32_t d : n.deps)
        if (d >= i)
          return fail("depends on node " + Twine(d) +
                      ", which does not come before it");
      switch (n.kind) {
      case NodeKind::Compute:
        if (n.flops == 0 || n.bytes == 0)
          return fail("a compute node needs positive num_ops and tensor_size");
        break;
      case NodeKind::Collective:
        if (n.bytes == 0)
          return fail("communicates 0 bytes");
        if (n.group < 0 || n.group >= int(w.groupAxes.size()))
          return fail("names no communicator group");
        break;
      case NodeKind::Send:
      case NodeKind::Recv:
        // A KV handoff's messages are another rank group's (KVHandoff.h).
        if (n.handoff)
          break;
        if (n.bytes == 0)
          return fail("communicates 0 bytes");
        if (n.tag < 0 || n.tag >= (int64_t(1) << 31))
          return fail("tag " + Twine(n.tag) + " is outside [0, 2^31)");
        if (peerOf(stage, n.shift, pp) == int64_t(stage))
          return fail("its peer is its own rank");
        break;
      }
    }
  }
  return success();
}

/// Runs every stage's representative: a node finishes once its
/// dependencies have; a receive also needs its send issued.
static LogicalResult runStages(const Workload &w, Location loc) {
  int64_t pp = int64_t(w.classes.size());
  std::vector<std::vector<char>> done(pp);
  std::vector<size_t> remaining(pp);
  for (int64_t s = 0; s < pp; ++s) {
    done[s].assign(w.classes[s].nodes.size(), 0);
    remaining[s] = w.classes[s].nodes.size();
  }
  std::map<Message, int64_t> inFlight;
  std::vector<size_t> firstOpen(pp, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t s = 0; s < pp; ++s) {
      const std::vector<TraceNode> &nodes = w.classes[s].nodes;
      for (size_t i = firstOpen[s]; i < nodes.size(); ++i) {
        if (done[s][i])
          continue;
        const TraceNode &n = nodes[i];
        if (!llvm::all_of(n.deps, [&](uint32_t d) { return done[s][d]; }))
          continue;
        if (n.handoff) {
          // The other rank group's side: checked when the set is verified.
        } else if (n.kind == NodeKind::Recv) {
          auto it = inFlight.find({peerOf(s, n.shift, pp), s, n.tag, n.bytes});
          if (it == inFlight.end() || it->second == 0)
            continue;
          --it->second;
        } else if (n.kind == NodeKind::Send) {
          ++inFlight[{s, peerOf(s, n.shift, pp), n.tag, n.bytes}];
        }
        done[s][i] = 1;
        --remaining[s];
        progress = true;
      }
      while (firstOpen[s] < nodes.size() && done[s][firstOpen[s]])
        ++firstOpen[s];
    }
  }
  for (int64_t s = 0; s < pp; ++s) {
    if (!remaining[s])
      continue;
    const std::vector<TraceNode> &nodes = w.classes[s].nodes;
    for (size_t i = firstOpen[s]; i < nodes.size(); ++i) {
      const TraceNode &n = nodes[i];
      if (done[s][i] || n.kind != NodeKind::Recv || n.handoff ||
          !llvm::all_of(n.deps, [&](uint32_t d) { return done[s][d]; }))
        continue;
      return emitError(loc)
             << "the traces would hang: " << describe(n, s, i)
             << " waits for a send of " << n.bytes << " bytes with tag "
             << n.tag << " from stage " << peerOf(s, n.shift, pp)
             << " that never comes";
    }
    return emitError(loc) << "the traces would hang: stage " << s
                          << " cannot finish node " << firstOpen[s];
  }
  return success();
}

LogicalResult mlir::stage::chakra::checkWorkload(const Workload &w,
                                                 Location loc) {
  if (failed(checkNodes(w, loc)))
    return failure();
  return runStages(w, loc);
}
