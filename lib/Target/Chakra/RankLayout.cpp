//===- RankLayout.cpp - Ranks, coordinates and communicator groups --------===//

#include "RankLayout.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

RankLayout::RankLayout(const Workload &w, int64_t firstRank,
                       int64_t firstGroup)
    : firstRank(firstRank), firstGroup(firstGroup), degrees(w.degrees),
      ppAxis(w.ppAxis), sets(w.groupAxes) {
  strides.resize(degrees.size());
  for (int i = int(degrees.size()) - 1; i >= 0; --i) {
    strides[i] = numRanks;
    numRanks *= degrees[i];
  }
  int64_t base = 0;
  for (const SmallVector<int> &set : sets) {
    bases.push_back(base);
    int64_t members = 1;
    for (int a : set)
      members *= degrees[a];
    base += numRanks / members;
  }
  numGroups = base;
}

int64_t RankLayout::getGroupId(int64_t rank, int set) const {
  const SmallVector<int> &axes = sets[set];
  int64_t index = 0;
  for (unsigned a = 0; a < degrees.size(); ++a)
    if (!llvm::is_contained(axes, int(a)))
      index = index * degrees[a] + getCoordinate(rank, a);
  return firstGroup + bases[set] + index + 1;
}

int64_t RankLayout::getPipelinePeer(int64_t rank, int64_t shift) const {
  if (ppAxis < 0)
    return rank;
  int64_t pp = degrees[ppAxis], c = getCoordinate(rank, ppAxis);
  int64_t to = ((c + shift) % pp + pp) % pp;
  return rank + (to - c) * strides[ppAxis];
}

void RankLayout::writeGroupEntries(llvm::raw_ostream &os, bool &first) const {
  for (unsigned set = 0; set < sets.size(); ++set) {
    int64_t members = 1;
    for (int a : sets[set])
      members *= degrees[a];
    int64_t groups = numRanks / members;
    std::vector<std::vector<int64_t>> lists(groups);
    for (int64_t r = firstRank; r < firstRank + numRanks; ++r)
      lists[getGroupId(r, set) - firstGroup - bases[set] - 1].push_back(r);
    for (int64_t g = 0; g < groups; ++g) {
      os << (first ? "\n" : ",\n") << "  \""
         << firstGroup + bases[set] + g + 1 << "\": [";
      first = false;
      for (auto [i, r] : llvm::enumerate(lists[g]))
        os << (i ? ", " : "") << r;
      os << "]";
    }
  }
}
