//===- Sharding.h - Sharding annotations on values --------------*- C++ -*-===//
//
// `stage-shard` annotates values with `#stage.sharding` attributes and
// `stage-partition` consumes them. Results carry theirs in `stage.sharding`
// (one per result), block arguments in `stage.arg_sharding` on the op owning
// the region (one list per region), and every op the shardings it needs of
// its operands in `stage.operand_sharding`. `stage.natural_sharding` is what
// an op produces when that differs from the sharding its results keep
// (a pending partial sum, for instance).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_TRANSFORMS_SHARDING_H
#define STAGE_TRANSFORMS_SHARDING_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

namespace mlir::stage {

constexpr llvm::StringLiteral kShardingAttrName("stage.sharding");
constexpr llvm::StringLiteral kNaturalShardingAttrName("stage.natural_sharding");
constexpr llvm::StringLiteral kOperandShardingAttrName("stage.operand_sharding");
constexpr llvm::StringLiteral kArgShardingAttrName("stage.arg_sharding");
/// On an op of one result, from a frontend's shard annotations: the
/// sharding the plan gives that value; stage-shard keeps it.
constexpr llvm::StringLiteral kPlanShardingAttrName("stage.plan_sharding");
/// On the op computing a result of a trained program without a loss (a
/// layer imported alone): the value goes on to the rest of the model, so it
/// is stored as the plan lays out activations, not left a partial sum.
constexpr llvm::StringLiteral kProgramOutputAttrName("stage.output");

/// The sharding of a result or block argument; null when unannotated.
ShardingAttr getSharding(Value v);
void setResultShardings(Operation *op, ArrayRef<ShardingAttr> shardings);
void setArgShardings(Operation *op, unsigned region,
                     ArrayRef<ShardingAttr> shardings);
/// What `op` needs of operand `i`; null when unannotated.
ShardingAttr getOperandSharding(Operation *op, unsigned i);
void setOperandShardings(Operation *op, ArrayRef<ShardingAttr> shardings);
/// What `op` produces as result `i` before its results are resharded.
ShardingAttr getNaturalSharding(Operation *op, unsigned i);

/// The shape one rank holds: every dimension divided by the sizes of the
/// axes that split it.
SymTensorType getLocalType(SymTensorType global, ShardingAttr sharding);

/// Removes every sharding annotation under `root`.
void clearShardings(Operation *root);

/// The module's grid, the one the plan passes create.
GridOp getGrid(ModuleOp module);

} // namespace mlir::stage

#endif // STAGE_TRANSFORMS_SHARDING_H
