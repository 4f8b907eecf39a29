//===- TraceSet.h - A trace set, loaded and checked rank by rank -*- C++ -*-===//
//
// Each rank's file is decoded, checked on its own (framing, ids,
// dependencies, attributes, group membership) and reduced to what the
// cross-rank checks need: the dependency graph in compact form and the
// communication nodes. A 4096-rank set of millions of nodes fits in a few
// hundred megabytes this way.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRAVERIFY_TRACESET_H
#define STAGE_LIB_TARGET_CHAKRAVERIFY_TRACESET_H

#include "Stage/Target/ChakraVerify/Verifier.h"

#include "llvm/Support/ErrorOr.h"
#include "llvm/Support/MemoryBuffer.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace stage::trace {

enum NodeType : uint8_t {
  InvalidNode = 0, MetadataNode = 1, MemLoad = 2, MemStore = 3, CompNode = 4,
  SendNode = 5, RecvNode = 6, CollNode = 7
};

const char *commTypeName(uint64_t t);

/// Collects errors from several threads, keeping the first few hundred.
class Errors {
public:
  void add(std::string e);
  /// Adds what `other` holds (and whether it was truncated).
  void merge(Errors &other);
  std::vector<std::string> take(bool &truncated);
  size_t size();

private:
  static constexpr size_t kMax = 200;
  std::mutex m;
  std::vector<std::string> list;
  bool truncated = false;
};

/// A send, receive or collective, as one rank sees it.
struct CommNode {
  uint32_t index = 0; // position in the file
  uint64_t id = 0;
  uint8_t type = 0;
  int64_t src = 0, dst = 0, tag = 0, size = 0; // send/recv; size also coll
  uint64_t commType = 0;
  int64_t group = 0; // pg_name as a number; 0: all ranks
  const std::string *name = nullptr;
  /// "rank 3 node 17 'fwd:send'".
  std::string where(int64_t rank) const;
};

struct RankStats {
  std::map<std::string, int64_t> nodes; // by type
  uint64_t flops = 0, tensorBytes = 0, sendBytes = 0, recvBytes = 0;
  std::map<std::string, uint64_t> collectiveBytes;
};

/// What the ranks of one structure share: the dependency graph and the
/// communication nodes but for their peers and groups. Ranks whose files
/// differ only there (every rank of a pipeline stage, in stage's traces)
/// are held once, so that the set's memory grows with its distinct
/// structures, not its ranks.
struct ClassGraph {
  uint32_t numNodes = 0;
  std::vector<uint8_t> type;
  /// Successors in CSR form, and how many dependencies each node has.
  std::vector<uint32_t> succStart, succ, indeg;
  /// Index into `comm` of each node, or -1.
  std::vector<int32_t> commOf;
  /// The communication nodes, with the peers and group of the first rank.
  std::vector<CommNode> comm;
  std::vector<std::string> commNames;
  /// Per node, the seconds a compute node takes (with computeSeconds).
  std::vector<float> seconds;

  /// Equal but for the communication nodes' peers and groups.
  bool sameStructure(const ClassGraph &o) const;
  uint64_t structureHash() const;
};

struct RankGraph {
  std::string path;
  const ClassGraph *graph = nullptr;
  /// Per communication node: the peer of a send (destination) or receive
  /// (source), the group of a collective.
  std::vector<int32_t> peers;
  RankStats stats;
  bool namesGroups = false; // a collective names a group

  size_t numComm() const { return peers.size(); }
  /// Communication node `k` of this rank (`rank`: its number).
  CommNode comm(size_t k, int64_t rank) const {
    CommNode c = graph->comm[k];
    c.name = &graph->commNames[k];
    if (c.type == SendNode) {
      c.src = rank;
      c.dst = peers[k];
    } else if (c.type == RecvNode) {
      c.src = peers[k];
      c.dst = rank;
    } else {
      c.group = peers[k];
    }
    return c;
  }
  /// The communication node of node `i`.
  CommNode commOfNode(uint32_t i, int64_t rank) const {
    return comm(size_t(graph->commOf[i]), rank);
  }
};

struct TraceSet {
  std::vector<RankGraph> ranks;
  std::vector<std::unique_ptr<ClassGraph>> classes;
  std::map<int64_t, std::vector<int64_t>> groups;
  bool hasGroups = false;
};

/// Loads every rank's file and the groups file, checking each rank on its
/// own; false when there is nothing to check, or when the files are not
/// one whole set (SetFiles.h: no complete manifest, a file that does not
/// match it, ranks of different sets), `errors` then saying only that.
bool loadTraceSet(const TraceSetOptions &o, TraceSet &set, Errors &errors);

/// Reads the groups file `text` (`{"1": [0, 1], ...}`, positive decimal
/// keys, ranks below `n`) into `set.groups`.
void loadGroups(llvm::StringRef text, const std::string &path, int64_t n,
                TraceSet &set, Errors &errors);

/// Runs `body(i)` for i in [0, n) on `threads` threads (0: all cores).
void parallelFor(int64_t n, unsigned threads,
                 const std::function<void(int64_t)> &body);

} // namespace stage::trace

#endif // STAGE_LIB_TARGET_CHAKRAVERIFY_TRACESET_H
