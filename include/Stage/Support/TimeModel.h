//===- TimeModel.h - What a kernel and a collective take ---------*- C++ -*-===//
//
// The one formula of each: every time stage states (the report, the
// search, the traces' durations, the replay of a trace set) is a sum of
// these two, on a device profile (docs/CostModel.md gives the formulas and
// the sources of the profiles' numbers).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_TIMEMODEL_H
#define STAGE_SUPPORT_TIMEMODEL_H

#include "Stage/Support/DeviceProfile.h"

#include <cstdint>

namespace stage {

/// The results of one launch of a matrix multiplication: `batch`
/// independent products of `rows` x `columns` each. All 0: not a
/// multiplication, or a kernel whose tiling the model does not know.
struct MatmulShape {
  double rows = 0, columns = 0, batch = 0;
};

/// The fraction of the matrix units a multiplication of `shape` keeps
/// busy: its results over the results of the tiles that compute them,
/// each side rounded up to whole tiles (tile quantization; a side shorter
/// than the tile gets a tile cut to it) and the tiles to whole waves of one
/// tile per multiprocessor (wave quantization; fewer tiles than a wave
/// split their sums over the idle multiprocessors and lose only the
/// padding), the profile's tile laid whichever way loses less. 1 for an
/// unknown shape or a profile without a tile or multiprocessors.
double matmulTileEfficiency(const MatmulShape &shape, const DeviceProfile &d);

/// Seconds of `kernels` launches that do `contraction` FLOPs on the matrix
/// units, `other` FLOPs on the vector units and move `bytes` to and from
/// HBM, all together: the slower of compute (matrix work at the fraction
/// of peak the best-shaped multiplication reaches, times the tile
/// efficiency of the launches' `shape`) and memory (at the achieved
/// bandwidth), plus each launch's overhead.
double kernelSeconds(double contraction, double other, double bytes,
                     double kernels, const DeviceProfile &d,
                     const MatmulShape &shape = {});

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll, Send };

/// Where a group's `size` members sit: `perNode` of them share a node
/// (`perNode == size`: the group stays in one node). The groups of a grid
/// axis set tile the nodes alike, so one group's count holds for all.
struct GroupSpan {
  double size = 1;
  double perNode = 1;
};

/// Seconds of `executions` collectives of `kind` whose ring algorithm sends
/// `ringBytes` per rank in all (the traffic the report counts: 2 (n-1)/n
/// of the buffer for an all-reduce, (n-1)/n of the whole for an all-gather,
/// a reduce-scatter or an all-to-all, the message for a send). A group
/// inside a node runs its ring on the scale-up links; one that spans nodes
/// runs as NCCL's two levels: inside each node on the links, and across
/// nodes with each member carrying its 1/perNode share on its own NIC (an
/// all-to-all sends its other nodes' parts on the NIC and the rest on the
/// links at once). Bandwidths at the profile's achieved fractions; a
/// latency per ring step of each level.
double collectiveSeconds(CollectiveKind kind, double ringBytes,
                         const GroupSpan &span, double executions,
                         const DeviceProfile &d);

/// The members of the first group over some grid axes that share its
/// first node: the grid's axes last (fastest) first as (degree, in the
/// group), ranks numbered with the last axis fastest, `perNode` ranks per
/// node.
double membersPerNode(const std::pair<int64_t, bool> *axesLastFirst,
                      size_t numAxes, int64_t perNode);

} // namespace stage

#endif // STAGE_SUPPORT_TIMEMODEL_H
