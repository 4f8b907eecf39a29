//===- StageOps.h - Ops of the stage dialect --------------------*- C++ -*-===//

#ifndef STAGE_DIALECT_STAGE_IR_STAGEOPS_H
#define STAGE_DIALECT_STAGE_IR_STAGEOPS_H

#include "Stage/Dialect/Stage/IR/StageAttrs.h"
#include "Stage/Dialect/Stage/IR/StageCost.h"
#include "Stage/Dialect/Stage/IR/StageGradient.h"
#include "Stage/Dialect/Stage/Interfaces/ShardingRuleInterface.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <map>

namespace mlir::stage {
/// The type of a value the dialect's constraints make a stage tensor (the
/// ops' own accessors are typed already).
inline SymTensorType getTensorType(Value v) {
  return cast<SymTensorType>(v.getType());
}

/// The size of the group over grid `axes`: the product of their symbols.
sym::Expr getGroupSize(ArrayAttr axes);
} // namespace mlir::stage

#include "Stage/Dialect/Stage/IR/StageInterfaces.h.inc"

namespace mlir::stage {
/// The check shared by every communication op: `grid` names a `stage.grid`
/// and `axes` are distinct axes of it.
LogicalResult verifyGridAxes(Operation *op, FlatSymbolRefAttr grid,
                             ArrayAttr axes, SymbolTableCollection &symbols);
} // namespace mlir::stage

#define GET_OP_CLASSES
#include "Stage/Dialect/Stage/IR/StageOps.h.inc"

namespace mlir::stage {
/// The stages of a pipeline, in order.
SmallVector<PipelineStageOp> getPipelineStages(PipelineOp op);
/// The physical stage (pp coordinate) that runs virtual stage `chunk` of a
/// pipeline of `pp` physical stages under `kind`: `chunk mod pp`, or under
/// a V (chunk `j >= pp` on `2 pp - 1 - j`).
int64_t getPhysicalStage(ScheduleKind kind, int64_t pp, int64_t chunk);
/// A send or receive with shift 0: two stages of a pipeline on one rank
/// hand a value over in memory, no message.
bool isLocalHandoff(Operation *op);
/// Whether the schedule places its two stages per rank in a V (zb-v,
/// dualpipe-v, dualpipe).
bool isVShaped(ScheduleKind kind);
/// Whether the second arm of the V is a mirrored copy of the first (DualPipe:
/// stage pp + j holds stage j's layers and runs half the micro-batches).
bool isMirrored(ScheduleKind kind);
/// Whether the schedule runs a backward step as two: the input gradient
/// (B) and, later, the weight gradient (W).
bool splitsBackward(ScheduleKind kind);

/// An attention's sliding window, when it has one, is a positive number of
/// keys (a symbol, or a constant above zero).
LogicalResult verifyAttentionWindow(Operation *op, ExprAttr window);
} // namespace mlir::stage

#endif // STAGE_DIALECT_STAGE_IR_STAGEOPS_H
