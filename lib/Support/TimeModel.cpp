//===- TimeModel.cpp - What a kernel and a collective take ----------------===//

#include "Stage/Support/TimeModel.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace stage;

double stage::matmulTileEfficiency(const MatmulShape &shape,
                                   const DeviceProfile &d) {
  double slots = double(d.multiprocessors);
  if (shape.rows <= 0 || shape.columns <= 0 || shape.batch <= 0 ||
      d.matmulTileRows <= 0 || d.matmulTileColumns <= 0 || slots <= 0)
    return 1;
  double results = shape.rows * shape.columns * shape.batch;
  auto laid = [&](double alongRows, double alongColumns) {
    // A side shorter than the tile gets a tile cut to it (a narrower
    // kernel); a longer one pads its last tile.
    double tileRows = std::min(alongRows, shape.rows);
    double tileColumns = std::min(alongColumns, shape.columns);
    double tiles = std::ceil(shape.rows / tileRows) *
                   std::ceil(shape.columns / tileColumns) * shape.batch;
    // Fewer tiles than multiprocessors: the library splits the sum over
    // the idle ones (split-K), so only the padding is lost.
    double slotsTaken = tiles < slots ? tiles : std::ceil(tiles / slots) * slots;
    return results / (slotsTaken * tileRows * tileColumns);
  };
  return std::max(laid(double(d.matmulTileRows), double(d.matmulTileColumns)),
                  laid(double(d.matmulTileColumns), double(d.matmulTileRows)));
}

double stage::kernelSeconds(double contraction, double other, double bytes,
                            double kernels, const DeviceProfile &d,
                            const MatmulShape &shape) {
  double matrixRate =
      d.matmulFlops * d.matmulEfficiency * matmulTileEfficiency(shape, d);
  double compute = contraction / matrixRate + other / d.vectorFlops;
  double memory = bytes / (d.memoryBytes * d.memoryEfficiency);
  return std::max(compute, memory) + kernels * d.kernelOverhead;
}

double stage::collectiveSeconds(CollectiveKind kind, double ringBytes,
                                const GroupSpan &span, double executions,
                                const DeviceProfile &d) {
  double n = span.size;
  if (ringBytes <= 0 || n < 1)
    return 0;
  double link = d.linkBytes * d.linkEfficiency;
  double net = d.networkBytes * d.networkEfficiency;
  double r = std::clamp(span.perNode, 1.0, n), k = n / r;
  if (kind == CollectiveKind::Send) {
    bool across = r < n;
    return ringBytes / (across ? net : link) +
           executions * (across ? d.networkLatency : d.latency);
  }
  if (n <= 1)
    return 0;
  if (kind == CollectiveKind::AllToAll) {
    // Each rank sends (n - 1)/n of its buffer: (r - 1)/n to its node's
    // members, (n - r)/n to the other nodes', at once.
    double intra = ringBytes * (r - 1) / (n - 1);
    double inter = ringBytes * (n - r) / (n - 1);
    if (d.ringAllToAll) {
      // ASTRA-sim's default runs it as a ring: a part travels as many
      // hops as its distance, n/2 times the direct bytes per link.
      intra *= n / 2;
      inter *= n / 2;
    }
    double latency = (r - 1) * d.latency + (n - r) * d.networkLatency;
    return std::max(intra / link, inter / net) + executions * latency;
  }
  // The ring's traffic as a share of the buffer the level works on: the
  // levels move (r-1)/r of it inside a node and (k-1)/k of a 1/r share
  // across nodes, where one ring moves (n-1)/n of it.
  double buffer = ringBytes * n / (n - 1);
  double intra = buffer * (r - 1) / r;
  double inter = buffer * (k - 1) / k / r;
  double steps = kind == CollectiveKind::AllReduce ? 2 : 1;
  double latency = steps * ((r - 1) * d.latency + (k - 1) * d.networkLatency);
  return intra / link + inter / net + executions * latency;
}

double stage::membersPerNode(const std::pair<int64_t, bool> *axes,
                             size_t numAxes, int64_t perNode) {
  // Offsets of the group's members from its first rank: sums over the
  // group's axes of coordinate x stride. Count those inside the node,
  // enumerating only partial sums that stay inside it.
  std::vector<std::pair<int64_t, int64_t>> group; // (stride, degree)
  int64_t stride = 1;
  for (size_t i = 0; i < numAxes; ++i) {
    if (axes[i].second && axes[i].first > 1)
      group.push_back({stride, axes[i].first});
    stride *= std::max<int64_t>(axes[i].first, 1);
  }
  double count = 0;
  auto visit = [&](auto &self, size_t axis, int64_t offset) -> void {
    if (offset >= perNode)
      return;
    if (axis == group.size()) {
      ++count;
      return;
    }
    for (int64_t c = 0; c < group[axis].second; ++c)
      self(self, axis + 1, offset + c * group[axis].first);
  };
  visit(visit, 0, 0);
  return std::max(count, 1.0);
}
