//===- KVHandoff.cpp - KV caches moved from prefill to decode ranks -------===//

#include "KVHandoff.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

namespace {
/// stage.kv_cache's dimensions: layer, request, position, head, entry.
constexpr unsigned kRequestDim = 1, kPositionDim = 2;

using Interval = std::pair<int64_t, int64_t>; // [first, last)
using Box = SmallVector<Interval, 5>;

/// The distinct entries of `c` that `rank` holds for serving group `group`
/// of `groups`.
Box boxOf(const CacheShard &c, const RankLayout &layout, int64_t rank,
          int64_t group, int64_t groups) {
  Box box;
  for (unsigned d = 0; d < c.local.size(); ++d) {
    int64_t size = c.local[d], index = 0, whole = size;
    for (int axis : c.split[d]) {
      index = index * layout.getDegree(axis) + layout.getCoordinate(rank, axis);
      whole *= layout.getDegree(axis);
    }
    int64_t first = (d == 0 ? c.firstLayer : 0) + index * size;
    int64_t last = first + size;
    if (d == kRequestDim) {
      int64_t perGroup = size / groups;
      first += group * perGroup;
      last = first + perGroup;
    }
    if (int64_t distinct = c.distinct[d]) {
      first = first * distinct / whole;
      last = (last - 1) * distinct / whole + 1;
    }
    box.push_back({first, last});
  }
  return box;
}

int64_t overlap(const Box &a, const Box &b) {
  int64_t volume = 1;
  for (auto [x, y] : llvm::zip(a, b)) {
    int64_t n = std::min(x.second, y.second) - std::max(x.first, y.first);
    if (n <= 0)
      return 0;
    volume *= n;
  }
  return volume;
}

/// Entries some prefill ranks hold alike, after one group's prefill.
struct Holding {
  Box box;
  int64_t group;
  int64_t elementBytes;
  std::vector<int64_t> ranks;
};
} // namespace

FailureOr<KVHandoff> KVHandoff::plan(const Workload &prefill,
                                     const RankLayout &prefillRanks,
                                     const Workload &decode,
                                     const RankLayout &decodeRanks,
                                     Location loc) {
  // Per cache, the distinct boxes of the prefill group and who holds each.
  std::map<std::string, std::vector<Holding>> held;
  std::map<std::string, int64_t> promptPositions;
  {
    std::map<std::tuple<std::string, int64_t, Box>, size_t> index;
    int64_t first = prefillRanks.getFirstRank();
    for (int64_t r = first; r < first + prefillRanks.getNumRanks(); ++r)
      for (const CacheShard &c :
           prefill.classes[prefillRanks.getStage(r)].caches) {
        int64_t whole = c.local[kPositionDim];
        for (int axis : c.split[kPositionDim])
          whole *= prefillRanks.getDegree(axis);
        promptPositions[c.name] = whole;
        for (int64_t m = 0; m < prefill.servingGroups; ++m) {
          Box box = boxOf(c, prefillRanks, r, m, prefill.servingGroups);
          auto [it, added] =
              index.try_emplace({c.name, m, box}, held[c.name].size());
          if (added)
            held[c.name].push_back({box, m, c.elementBytes, {}});
          held[c.name][it->second].ranks.push_back(r);
        }
      }
  }

  // Bytes per (sender, its group, receiver, its group).
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, uint64_t> bytes;
  int64_t first = decodeRanks.getFirstRank();
  for (int64_t r = first; r < first + decodeRanks.getNumRanks(); ++r)
    for (const CacheShard &c : decode.classes[decodeRanks.getStage(r)].caches)
      for (int64_t m = 0; m < decode.servingGroups; ++m) {
        Box need = boxOf(c, decodeRanks, r, m, decode.servingGroups);
        auto from = held.find(c.name);
        if (from == held.end())
          return emitError(loc) << "the decode group caches '" << c.name
                                << "', which the prefill group does not";
        Interval &positions = need[kPositionDim];
        positions.second = std::min(positions.second, promptPositions[c.name]);
        int64_t wanted = overlap(need, need), found = 0;
        for (const Holding &h : from->second) {
          int64_t n = overlap(need, h.box);
          if (!n)
            continue;
          if (h.elementBytes != c.elementBytes)
            return emitError(loc) << "the groups cache '" << c.name
                                  << "' in different element types";
          found += n;
          int64_t sender = h.ranks[(r - first) % h.ranks.size()];
          bytes[{sender, h.group, r, m}] += uint64_t(n) * c.elementBytes;
        }
        if (found != wanted)
          return emitError(loc)
                 << "decode rank " << r << " needs " << wanted
                 << " entries of the cache '" << c.name << "' for group " << m
                 << ", and the prefill group holds " << found
                 << ": the groups split the cache differently";
      }

  KVHandoff h;
  for (const auto &[key, n] : bytes) {
    auto [sender, sent, receiver, received] = key;
    int64_t tag = sent * decode.servingGroups + received;
    h.messages[{sender, sent}].push_back({receiver, n, tag});
    h.messages[{receiver, received}].push_back({sender, n, tag});
    h.totalBytes += n;
    ++h.numMessages;
  }
  return h;
}

ArrayRef<HandoffMessage> KVHandoff::getMessages(int64_t rank,
                                                int64_t group) const {
  auto it = messages.find({rank, group});
  if (it == messages.end())
    return {};
  return it->second;
}
