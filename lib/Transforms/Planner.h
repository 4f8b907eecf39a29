//===- Planner.h - The sharding of every value and op -----------*- C++ -*-===//
//
// stage-shard's planner. Values keep the sharding the rules give their
// type. For each op, every grid axis is assigned to at most one factor of
// the op's index space (or to none) so that the bytes moved are smallest:
// resharding operands to what the assignment needs, plus resharding the
// result it produces to the sharding the result keeps. Weight gradients
// may stay partial sums over the data-parallel axes; everything else is
// resolved right after its op. Shard.cpp has the shardings values keep and
// the ops planned by hand, PlannerFactors.cpp the choice of factors.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TRANSFORMS_PLANNER_H
#define STAGE_LIB_TRANSFORMS_PLANNER_H

#include "ShardingRules.h"

#include "Stage/Dialect/Stage/IR/ShardingLayout.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "llvm/ADT/DenseMap.h"

#include <map>
#include <set>

namespace mlir::stage {

/// What the plan of one op starts from: the layouts its operands have and
/// its results keep, which operands are weights, and the partial sums that
/// pass through it unresolved.
struct OpLayouts {
  SmallVector<ShardingLayout> operands, results;
  SmallVector<bool> isWeight;
  AxisList passPartial;
};

class Planner {
public:
  Planner(const ShardingRules &rules, MLIRContext *ctx)
      : rules(rules), ctx(ctx) {}

  LogicalResult planBlock(Block &block);

  /// Plans again knowing every gather the previous round needed: a gather
  /// several consumers share (the input of the q, k and v projections, and
  /// of their three weight gradients) is paid once.
  void nextRound() {
    paid = std::move(gathered);
    gathered.clear();
    moved.clear();
  }

private:
  LogicalResult planOp(Operation *op);
  /// Plans an op by its sharding rule (PlannerFactors.cpp): the layouts it
  /// starts from, a factor for every grid axis, the annotations.
  LogicalResult planWithModel(Operation *op, const FactorModel &m);
  OpLayouts gatherLayouts(Operation *op, const FactorModel &m);
  /// The factor `axis` splits (-1: none), the cheapest by reshardCost.
  int chooseFactor(Operation *op, const FactorModel &m, const OpLayouts &l,
                   StringRef axis);
  /// What splitting factor `f` (-1: none) over `axis` moves, in bytes.
  double reshardCost(Operation *op, const FactorModel &m, const OpLayouts &l,
                     StringRef axis, int f);
  void writeAnnotations(Operation *op, const FactorModel &m, const OpLayouts &l,
                        const std::map<std::string, int> &choice);
  /// The axes over which a partial sum `v` can wait to be reduced
  /// (PlannerFactors.cpp).
  SmallVector<std::string> sumsLater(Value v, int depth = 0);
  LogicalResult planRepeat(RepeatOp op);
  LogicalResult planMicrobatches(MicrobatchesOp op);
  LogicalResult planOptimizer(OptimizerStepOp op);
  void planDispatchLike(Operation *op);

  /// The sharding a value keeps: the rules', or for weight gradients the
  /// weight's with the data-parallel axes pending (ZeRO >= 2: partitioned).
  ShardingAttr keptSharding(Value v);
  ShardingAttr current(Value v) {
    if (ShardingAttr s = getSharding(v))
      return s;
    return rules.getDesired(cast<SymTensorType>(v.getType()));
  }
  /// The sharding a frontend's plan gives `v`, if any.
  static ShardingAttr planSharding(Value v) {
    Operation *def = v.getDefiningOp();
    return def ? getPlanSharding(def) : ShardingAttr();
  }
  /// A weight's sharding: the frontend plan's, else the rules'.
  ShardingAttr weightSharding(Value weight) {
    if (ShardingAttr s = planSharding(weight))
      return s;
    return rules.getDesired(cast<SymTensorType>(weight.getType()));
  }
  ShardingAttr weightGradSharding(Value grad, ArrayRef<std::string> partial);
  /// How a value the backward keeps is stored: as it is, or (keep-gathered)
  /// as the gathered copy the forward already made of it.
  ShardingAttr storedSharding(Value v, Block *block);
  /// Notes that `v` reaches a consumer in `block` by an all-to-all.
  void recordMove(Value v, Block *block, ShardingAttr need);
  void markGradients(MicrobatchesOp op);

  double bytes(Value v) {
    return rules.getBytes(cast<SymTensorType>(v.getType()));
  }
  int64_t degree(StringRef axis) { return rules.getDegree(axis); }

  const ShardingRules &rules;
  MLIRContext *ctx;
  /// Weight gradients, each with the sharding of its weight.
  llvm::DenseMap<Value, ShardingAttr> gradients;
  bool failedZero = false;
  /// Gathers already needed in a block, (value, axis): the next consumer of
  /// the same value gets the gathered copy for free (q, k and v projections
  /// share the gathered input, as in Megatron).
  std::set<std::tuple<void *, std::string, Block *>> gathered, paid;
  /// Values a consumer in a block reads after an all-to-all (the tokens an
  /// expert layer receives), with the sharding it reads them in.
  std::map<std::pair<void *, Block *>, ShardingAttr> moved;
};

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_PLANNER_H
