//===- Encoder.h - Chakra nodes as bytes, per rank --------------*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_CHAKRA_ENCODER_H
#define STAGE_LIB_TARGET_CHAKRA_ENCODER_H

#include "RankLayout.h"
#include "Workload.h"

#include <string>
#include <vector>

namespace mlir::stage::chakra {

/// Chakra field numbers (schema 0.0.4).
namespace field {
enum : unsigned {
  MetaVersion = 1, MetaAttr = 2,
  NodeId = 1, NodeName = 2, NodeType = 3, NodeDataDeps = 5,
  NodeDurationMicros = 7, NodeAttr = 10,
  AttrName = 1, AttrInt32 = 7, AttrInt64 = 9, AttrUint64 = 13, AttrBool = 27,
  AttrBoolList = 28, AttrString = 29, AttrStringList = 30,
  ListValues = 1, // the `values` of every *_list message
};
enum NodeType : unsigned { CompNode = 4, SendNode = 5, RecvNode = 6, CollNode = 7 };
} // namespace field

/// The GlobalMetadata message of rank `rank` of a set of `ranks`, framed:
/// `version = "0.0.4"` and the attributes that tie the file to its set
/// (`trace_set`, the set's identity; `rank`; `num_ranks`).
void encodeMetadata(std::string &out, llvm::StringRef setId, int64_t rank,
                    int64_t ranks);

/// One rank class's trace pre-encoded: every node's bytes that are the same
/// for all its ranks, and for the few nodes with rank-specific fields
/// (communicator group, send/recv peer) the part that is not.
class ClassTemplate {
public:
  ClassTemplate(const Workload &w, const ClassTrace &trace);

  /// Appends rank `r`'s nodes to `out` (its file after the metadata); a
  /// send or receive whose peer is `handoffPeer(k)` goes to
  /// `handoffPeers[k]`.
  void encodeRank(const RankLayout &layout, int64_t rank, std::string &out,
                  ArrayRef<int64_t> handoffPeers = {}) const;

  /// The `peer` of a node whose peer is the rank's k-th handoff peer.
  static int64_t handoffPeer(size_t k) { return -2 - int64_t(k); }

private:
  struct Patch {
    size_t offset;   // where the node goes, in `fixed`
    std::string head; // the node's fixed fields, unframed
    NodeKind kind;
    int group;
    int64_t shift;
    int64_t peer; // -1: along pp, `shift` steps; below: handoffPeer(k)
  };
  std::string fixed;         // framed invariant nodes, with gaps at patches
  std::vector<Patch> patches;
};

} // namespace mlir::stage::chakra

#endif // STAGE_LIB_TARGET_CHAKRA_ENCODER_H
