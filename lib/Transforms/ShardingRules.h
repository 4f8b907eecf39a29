//===- ShardingRules.h - The plan as logical-axis rules ---------*- C++ -*-===//
//
// Every dimension has a logical role read from its symbols (B: batch, S:
// sequence, H: heads, F: ffn width, V: vocabulary, E: experts, ...); the
// plan maps roles to grid axes. The sharding a value should have follows
// from its type alone, so producers and consumers (a send and its receive,
// a forward value and its kept copy) always agree.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TRANSFORMS_SHARDINGRULES_H
#define STAGE_LIB_TRANSFORMS_SHARDINGRULES_H

#include "Stage/Dialect/Stage/IR/ShardingLayout.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"

#include <map>
#include <string>
#include <unordered_set>

namespace mlir::stage {

enum class Role {
  None,
  Layer,   // a layer stack: never split (pipelining splits layers)
  Batch,   // sequences
  Tokens,  // flattened batch x sequence (expert buffers)
  Seq,     // positions within a sequence
  Heads,   // attention heads
  KVHeads, // key/value heads
  Ffn,     // feed-forward width
  Vocab,   // vocabulary
  Experts, // experts of a mixture
};

const char *getRoleName(Role r);
std::optional<Role> parseRole(llvm::StringRef name);

struct ParallelPlan {
  /// Grid axes, outermost first, and their degrees.
  SmallVector<std::string> axes;
  std::map<std::string, int64_t> degree;
  bool sequenceParallel = true;
  /// Keep the gathered copy of an activation the backward reads again (the
  /// input of a column-parallel layer under SP) instead of gathering twice.
  bool keepGathered = false;
  int zeroStage = 0;
  /// role -> axes, in priority order; overrides the Megatron defaults.
  std::map<Role, SmallVector<std::string>> overrides;
  /// symbol -> role, for symbols other than the standard names.
  std::map<std::string, Role> symbolRoles;
  sym::Bindings bindings;

  int64_t degreeOf(llvm::StringRef axis) const {
    auto it = degree.find(axis.str());
    return it == degree.end() ? 1 : it->second;
  }
};

class ShardingRules {
public:
  /// Fails (with an error at `module`) on a plan the model cannot take:
  /// kv heads neither divisible by tp nor dividing it.
  static FailureOr<ShardingRules> create(ModuleOp module, ParallelPlan plan);

  const ParallelPlan &getPlan() const { return plan; }
  /// The role of each dimension of `t`. A leading dimension equal to the
  /// count of a layer stack of the module is the layer dimension, whatever
  /// its spelling (`L`, `L - Ld`, a pipeline stage's `16`).
  SmallVector<Role> getRoles(SymTensorType t) const;

  /// The sharding a value of type `t` keeps. Token ids fed to the step
  /// (`tokenIds`) are not activations: sequence parallelism leaves them
  /// whole over tp.
  ShardingAttr getDesired(SymTensorType t, bool tokenIds = false) const;

  /// Axes over which the gradient of a weight of this sharding is a partial
  /// sum before reduction: the data-parallel axes, without ep for experts.
  SmallVector<std::string> getDataAxes(ShardingAttr weight) const;
  /// The sharding of ZeRO-partitioned state of a weight of type `t` and
  /// rule sharding `s`: the data axes on the first dimension they divide.
  FailureOr<ShardingAttr> getZeroSharding(Location loc, SymTensorType t,
                                          ShardingAttr s) const;

  double getBytes(SymTensorType t) const;
  /// Whether kv heads are replicated over tp (more tp ranks than kv heads).
  bool replicatesKV() const { return replicateKV; }
  int64_t getDegree(llvm::StringRef axis) const { return plan.degreeOf(axis); }

private:
  explicit ShardingRules(ParallelPlan p) : plan(std::move(p)) {}
  Role getRole(const sym::Expr &dim) const;
  SmallVector<std::string> axesFor(Role r, bool tokenIds) const;

  ParallelPlan plan;
  /// The counts of the module's `stage.repeat` ops.
  std::unordered_set<sym::Expr> layerCounts;
  bool replicateKV = false;
};

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_SHARDINGRULES_H
