//===- RankClasses.h - The ranks that run the same program ------*- C++ -*-===//
//
// In an SPMD training step every rank of one pipeline stage runs the same
// program on the same local shapes; ranks differ only in their peers and
// groups. A rank class is one pipeline stage: the chunks (pipeline_stage
// bodies, several under the interleaved schedule) it runs, or the whole
// function without a pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_RANKCLASSES_H
#define STAGE_ANALYSIS_RANKCLASSES_H

#include "Stage/Analysis/PipelineSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::stage {

struct RankClass {
  int64_t stage = 0;
  /// The ops whose bodies this class runs: pipeline_stage ops, or the
  /// function itself.
  SmallVector<Operation *> chunks;
  /// The virtual stage index of each chunk (it runs on physical stage
  /// getPhysicalStage(kind, pp, c): c mod pp, or the V of zb-v).
  SmallVector<int64_t> chunkIds;
  /// The layers of each chunk, [begin, end); empty without a pipeline.
  SmallVector<std::pair<int64_t, int64_t>> layers;
};

struct StepStructure {
  SmallVector<RankClass> classes;
  /// The schedule: kind, pp, v; microBatches is the symbolic count of the
  /// micro-batch loops or serving groups (1 without one).
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  int64_t stages = 1;
  int64_t virtualStages = 1;
  sym::Expr microBatches = sym::Expr(1);
  /// A serving program (stage.serve) rather than a training step.
  bool serving = false;
};

/// The rank classes of `fn`, one per physical pipeline stage: found once
/// while a SymbolicCache lives (a search evaluates many plans on one step).
std::shared_ptr<const StepStructure> getStepStructure(func::FuncOp fn);

/// The first chunk of `chunk`'s function whose body is the same IR as
/// `chunk`'s but for the peers and channels of its sends and receives
/// (`chunk` itself if none before it is): the middle stages of a deep
/// pipeline hold the same layers, and what an analysis of costs, times or
/// memory evaluates for a chunk under some bindings is then the same for
/// its twins (none reads a message's peer or channel, only whether the
/// peer is the rank itself). Found once
/// while a SymbolicCache lives; without one, every chunk is its own.
Operation *getTwinChunk(Operation *chunk);

/// The micro-batch loop of a chunk, if it has one.
MicrobatchesOp getMicrobatches(Operation *chunk);
/// The serving op of a chunk, if it has one.
ServeOp getServe(Operation *chunk);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_RANKCLASSES_H
