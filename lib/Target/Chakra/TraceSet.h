//===- TraceSet.h - The files of a run, rank by rank ------------*- C++ -*-===//
//
// A run's trace set: the ranks of one workload, or those of a
// disaggregated serving run's prefill group followed by its decode group,
// with the KV handoff between them. Ranks are encoded from class templates:
// a class with handoff nodes has one template per shape of its ranks'
// messages (how many per handoff node, their sizes and tags), the messages
// in place of each handoff node and their peers patched per rank.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRA_TRACESET_H
#define STAGE_LIB_TARGET_CHAKRA_TRACESET_H

#include "Encoder.h"
#include "KVHandoff.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace mlir::stage::chakra {

class TraceSet {
public:
  /// Every rank of `w`.
  explicit TraceSet(Workload w);
  /// A disaggregated run: the prefill group's ranks, then the decode
  /// group's, their groups numbered in the same order.
  static FailureOr<TraceSet> disaggregated(Workload prefill, Workload decode,
                                           Location loc);

  int64_t getNumRanks() const;
  /// The set's identity (32 hex digits): a digest of everything its files'
  /// bytes are made from, so that two runs of one step agree on it and
  /// steps that differ in anything do not. Every rank's metadata carries it.
  const std::string &getIdentity() const { return identity; }
  /// Appends rank `rank`'s whole file to `out`.
  void encodeRank(int64_t rank, std::string &out) const;
  /// The communicator groups file of every rank group.
  void writeGroups(llvm::raw_ostream &os) const;
  /// The rank groups' workloads, in rank order.
  SmallVector<const Workload *> getWorkloads() const;
  const KVHandoff *getHandoff() const { return handoff ? &*handoff : nullptr; }

private:
  struct Part {
    Part(Workload w, int64_t firstRank, int64_t firstGroup);
    Workload w;
    RankLayout layout;
    /// Per class; none for a class with handoff nodes.
    std::vector<std::optional<ClassTemplate>> templates;
    /// Per class, the serving group of each handoff node, in order.
    std::vector<SmallVector<int64_t>> handoffGroups;
    /// A class with handoff nodes: its templates by message shape, built
    /// as ranks need them (by any writer thread).
    mutable std::map<std::string, std::unique_ptr<ClassTemplate>> shaped;
    mutable std::mutex shapedLock;
  };
  TraceSet() = default;
  void addPart(Workload w);
  void computeIdentity();

  std::vector<std::unique_ptr<Part>> parts;
  std::optional<KVHandoff> handoff;
  std::string identity;
};

} // namespace mlir::stage::chakra

#endif // STAGE_LIB_TARGET_CHAKRA_TRACESET_H
