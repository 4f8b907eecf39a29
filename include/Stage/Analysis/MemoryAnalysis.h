//===- MemoryAnalysis.h - Memory of a rank over one iteration ---*- C++ -*-===//
//
// Per rank class of a partitioned training step (local shapes): the model
// states (weights, accumulated gradients, fp32 master weights, optimizer
// moments: the `stage.param` ops and the micro-batch loops' gradient
// results), the activations one micro-batch keeps for its backward (what
// the forward region yields), how many micro-batches the schedule keeps in
// flight, and the largest transient working set of a step, from the
// liveness of the values in the IR. The peak is the largest moment of
// states + kept activations in flight + the running step's working set.
// A serving program holds weights and KV caches; its peak adds the larger
// working set of a prefill and of the last decode step.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_MEMORYANALYSIS_H
#define STAGE_ANALYSIS_MEMORYANALYSIS_H

#include "Stage/Analysis/DeviceModel.h"
#include "Stage/Analysis/RankClasses.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir::stage {

struct ChunkMemory {
  /// Of what one micro-batch keeps from its forward for its backward
  /// (StageExprs::keptPerMicrobatch), the bytes per layer of the layer stack
  /// keeping the most per layer (0 without one); bound, since a stack's count
  /// may be a sum (`L - Ld`).
  sym::Rational keptPerLayer;
  /// The largest working set of a forward / backward step beyond what is
  /// kept, the states and the step's inputs.
  sym::Rational forwardTransient, backwardTransient;
  /// Under a schedule that runs the weight gradients apart: of the kept
  /// bytes, those the weight gradients read (the rest is freed by the input
  /// gradient), and what the input gradient computes for them (the layers'
  /// output gradients), held until the weight-gradient step.
  sym::Rational keptForWeights, heldForWeights;
};

/// A rank class's memory as expressions: derived from the IR once per class
/// while a SymbolicCache lives (a search evaluates them for many plans).
struct StageExprs {
  sym::Expr weights, gradients, masterWeights, optimizerMoments;
  /// The elements of the weights (`kind "weight"`) the rank holds.
  sym::Expr parameters;
  /// weights + gradients + master weights + optimizer moments.
  sym::Expr modelStates;
  /// Per chunk: the bytes one micro-batch keeps from its forward for its
  /// backward.
  std::vector<sym::Expr> keptPerMicrobatch;
};

struct StageMemory {
  int64_t stage = 0;
  std::shared_ptr<const StageExprs> exprs;
  /// The states under the bindings analyzed (training programs).
  struct Values {
    sym::Rational weights, gradients, masterWeights, optimizerMoments,
        modelStates, parameters;
  } values;
  std::vector<ChunkMemory> chunks;
  /// The most micro-batches (of any chunk) whose activations are kept at
  /// once, and those activations' bytes at that moment.
  int64_t peakInFlight = 0;
  sym::Rational peakActivations;
  /// The working set of the optimizer phase (reduced gradients, gathered
  /// weights), beyond the states.
  sym::Rational optimizerTransient;
  /// Bytes at the peak, and what runs then ("forward of micro-batch 3").
  sym::Rational peak;
  std::string peakAt;
  /// Serving: the KV caches (`stage.kv_cache`, allocated for S + N
  /// positions) and the largest working set of a prefill and of a decode
  /// step (the last, whose context is longest).
  sym::Expr kvCache;
  sym::Rational prefillTransient, decodeTransient;
};

/// The memory of every rank class of `fn` when its schedule runs on `d`
/// (a zero-bubble schedule's order follows its steps' times); errors at
/// `fn` when a size does not evaluate under `b`.
FailureOr<std::vector<StageMemory>> analyzeMemory(func::FuncOp fn,
                                                  const sym::Bindings &b,
                                                  const DeviceModel &d);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_MEMORYANALYSIS_H
