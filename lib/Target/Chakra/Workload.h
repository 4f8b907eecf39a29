//===- Workload.h - Per-rank-class node lists of a program ------*- C++ -*-===//
//
// The trace of every rank of one pipeline stage is the same program: only
// communicator groups and send/recv peers depend on the rank. A Workload
// holds one node list per stage (a rank class), with groups and peers
// symbolic (an axis set, an axis shift); RankLayout turns them into ids.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRA_WORKLOAD_H
#define STAGE_LIB_TARGET_CHAKRA_WORKLOAD_H

#include "Stage/Analysis/DeviceModel.h"
#include "Stage/Support/SymExpr.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir::stage::chakra {

enum class NodeKind { Compute, Collective, Send, Recv };

/// Chakra CollectiveCommType values.
enum CommType : int { AllReduce = 0, AllGather = 2, AllToAll = 6, ReduceScatter = 7 };

struct TraceNode {
  NodeKind kind = NodeKind::Compute;
  std::string name;
  uint64_t flops = 0;    // compute: num_ops
  uint64_t bytes = 0;    // compute: tensor_size; communication: comm_size
  uint64_t micros = 0;   // duration with a device model (0: none)
  int commType = 0;      // collective
  int group = -1;        // collective: index into Workload::groupAxes
  int64_t shift = 0;     // send/recv: peer is `shift` steps along pp
  int64_t tag = 0;       // send/recv; collective: its index in the group
  /// Send/recv: the peer's rank, when it is not along pp (-1: `shift`;
  /// below -1: a handoff peer, ClassTemplate::handoffPeer).
  int64_t peer = -1;
  /// A KV handoff of serving group `tag` (disaggregated serving): stands
  /// for the messages each rank sends or receives (KVHandoff.h).
  bool handoff = false;
  SmallVector<uint32_t, 4> deps;
  /// With --io-info: the leading `dataDeps` of `deps` are the nodes whose
  /// outputs this one reads (the others only order it), and `outBytes` what
  /// it writes.
  uint32_t dataDeps = 0;
  uint64_t outBytes = 0;
};

/// The part of a KV cache the ranks of a class hold: which layers,
/// requests, positions and heads (dimensions as in stage.kv_cache).
struct CacheShard {
  std::string name;
  /// A rank's piece, and the grid axes (indices into Workload::axes,
  /// outermost first) that split each dimension.
  SmallVector<int64_t> local;
  SmallVector<SmallVector<int>> split;
  /// The class's first layer of the stack (pipeline stages before it).
  int64_t firstLayer = 0;
  /// Per dimension, the distinct entries when the whole dimension holds
  /// copies (KV heads replicated over tp); 0: every entry distinct.
  SmallVector<int64_t> distinct;
  int64_t elementBytes = 0;
};

struct ClassTrace {
  std::vector<TraceNode> nodes;
  /// A serving program's KV caches (for their handoff).
  std::vector<CacheShard> caches;
};

struct Workload {
  /// Grid axes outermost first and their degrees.
  SmallVector<std::string> axes;
  SmallVector<int64_t> degrees;
  int ppAxis = -1;
  /// The distinct axis sets collectives use (indices into `axes`, sorted).
  std::vector<SmallVector<int>> groupAxes;
  /// One trace per pipeline stage (pp coordinate).
  std::vector<ClassTrace> classes;
  /// A serving program's groups of requests (micro-batches); 0: training.
  int64_t servingGroups = 0;
  /// Nodes carry `inputs`/`outputs` (ASTRA-sim's memory tracker).
  bool ioInfo = false;
  /// With a device: its GPUs per node, so that a collective says which
  /// levels of a two-level network its group spans (`involved_dim`); 0:
  /// none said.
  int64_t gpusPerNode = 0;
  /// A serving program's decode steps under their own bindings (empty: the
  /// step loop's count).
  std::vector<sym::Bindings> servingSteps;

  int64_t getNumRanks() const {
    int64_t n = 1;
    for (int64_t d : degrees)
      n *= d;
    return n;
  }
};

/// PyTorch DDP's default bucket (`bucket_cap_mb=25`).
constexpr uint64_t kDefaultGradientBucketBytes = 25ull << 20;

/// Binds the symbols and expands the partitioned, scheduled program of
/// `module` (a training step, or a serving run: ServingWorkload.h) into
/// per-stage node lists. Gradient reductions are issued in
/// buckets of at least `gradientBucketBytes` (0: one per gradient and
/// layer); with `ioInfo` nodes record what they read and write; a serving
/// program's decode steps are `servingSteps`' when given. Errors go to the
/// module's location.
FailureOr<Workload>
buildWorkload(ModuleOp module, const sym::Bindings &b,
              const DeviceModel *device,
              uint64_t gradientBucketBytes = kDefaultGradientBucketBytes,
              bool ioInfo = false,
              const std::vector<sym::Bindings> &servingSteps = {});

} // namespace mlir::stage::chakra

#endif // STAGE_LIB_TARGET_CHAKRA_WORKLOAD_H
