//===- RankLayout.h - Ranks, coordinates and communicator groups -*- C++ -*-===//
//
// Rank r has mixed-radix coordinates over the grid axes, outermost first
// (the last axis varies fastest). The groups of an axis set are the sets of
// ranks that differ only in those axes; the axis sets are numbered in the
// order the trace first uses them, and their groups get consecutive ids
// from 1: group g of axis set k has id 1 + (groups of sets before k) + g,
// where g enumerates the coordinates of the other axes (mixed radix).
// In a trace set of several rank groups (disaggregated serving), a layout
// covers the ranks from `firstRank` and the group ids after `firstGroup`.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRA_RANKLAYOUT_H
#define STAGE_LIB_TARGET_CHAKRA_RANKLAYOUT_H

#include "Workload.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::stage::chakra {

class RankLayout {
public:
  explicit RankLayout(const Workload &w, int64_t firstRank = 0,
                      int64_t firstGroup = 0);

  int64_t getNumRanks() const { return numRanks; }
  int64_t getFirstRank() const { return firstRank; }
  /// The groups' ids are (firstGroup, firstGroup + getNumGroups()].
  int64_t getNumGroups() const { return numGroups; }
  int64_t getDegree(int axis) const { return degrees[axis]; }
  int64_t getCoordinate(int64_t rank, int axis) const {
    return ((rank - firstRank) / strides[axis]) % degrees[axis];
  }
  /// The pipeline stage (pp coordinate) of a rank: its trace's class.
  int64_t getStage(int64_t rank) const {
    return ppAxis < 0 ? 0 : getCoordinate(rank, ppAxis);
  }
  /// The id of the group of axis set `set` that contains `rank`.
  int64_t getGroupId(int64_t rank, int set) const;
  /// The rank `shift` steps along pp (cyclically).
  int64_t getPipelinePeer(int64_t rank, int64_t shift) const;

  /// The groups' entries of the groups file (`{"1": [0, 1], ...}`), ids in
  /// increasing order, each on a line of its own after a comma unless
  /// `first` (which it clears).
  void writeGroupEntries(llvm::raw_ostream &os, bool &first) const;

private:
  int64_t numRanks = 1, firstRank, firstGroup, numGroups = 0;
  SmallVector<int64_t> degrees, strides;
  int ppAxis;
  std::vector<SmallVector<int>> sets;
  SmallVector<int64_t> bases;
};

} // namespace mlir::stage::chakra

#endif // STAGE_LIB_TARGET_CHAKRA_RANKLAYOUT_H
