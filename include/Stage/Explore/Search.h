//===- Search.h - The best plans of a model on N GPUs -----------*- C++ -*-===//
//
// The plan search (docs/Explore.md): the plan space of PlanSpace.h, grouped
// by shape (what the compiled step's structure depends on: the pipeline,
// schedule, ZeRO stage, recomputation, sp, and which axes are split), one
// stage-train compilation per shape, then every plan of the shape evaluated
// from the same step under its own degrees and micro-batch count, with the
// report's memory and time (StepEstimate.h).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_EXPLORE_SEARCH_H
#define STAGE_EXPLORE_SEARCH_H

#include "Stage/Explore/PlanSpace.h"

#include "Stage/Analysis/DeviceModel.h"
#include "Stage/Target/Report/StepEstimate.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>

namespace mlir::stage::explore {

struct SearchRequest {
  int64_t gpus = 1;
  DeviceModel device;
  /// Overrides of the model's batch (sequences per iteration) and sequence.
  std::optional<int64_t> batch, seq;
  std::vector<Constraint> constraints;
  int64_t maxVirtualStages = 4;
  /// Shapes compiled and evaluated at once (0: one per core).
  unsigned threads = 0;
  /// Serving plans (stage-infer) instead of training ones: each request
  /// decodes `decodeTokens` tokens, and plans whose time per output token
  /// exceeds `maxTpotSeconds` (when positive) are left out.
  bool serving = false;
  int64_t decodeTokens = 128;
  double maxTpotSeconds = 0;
  /// Training: the number of best plans the caller reads. A plan whose
  /// iteration is bounded below by more than the best `exactTop`-th found
  /// cannot be among them and is not evaluated, a shape none of whose plans
  /// can is not compiled (docs/Explore.md); 0 evaluates every plan.
  int64_t exactTop = 0;
};

struct Candidate {
  Plan plan;
  report::StepEstimate estimate;
  /// Model FLOPs (3x the forward's) over the iteration and the GPUs' peak
  /// (training).
  double mfu = 0;
  /// Training: tokens (B S) per second of iteration per GPU; serving:
  /// decode tokens per second per GPU (B over the time per output token).
  double tokensPerSecondPerGpu = 0;
  /// Training: the search's lower bound of the iteration (seconds; 0 where
  /// none was computed).
  double iterationBound = 0;
  /// Training: the search's lower bound of the peak memory (bytes; 0 where
  /// none was computed).
  int64_t peakBound = 0;
};

struct SearchProgress {
  int64_t shapesDone = 0, shapes = 0, evaluated = 0, fitting = 0;
};

struct SearchResult {
  /// The plans that fit the device, best (shortest iteration) first.
  std::vector<Candidate> ranked;
  int64_t enumerated = 0, shapes = 0, evaluated = 0;
  /// Plans left out before evaluation (by the model's sizes, constraints,
  /// a shape that does not compile), by reason.
  std::map<std::string, int64_t> excluded;
  /// Plans over the device memory: ruled out before compiling by a lower
  /// bound of their model states (and the smallest such bound); evaluated
  /// ones whose model states alone exceed it, the rest; and the smallest
  /// evaluated peak over it.
  int64_t statesBoundOver = 0, smallestBoundOver = 0;
  /// Training plans ruled out before compiling by a lower bound of their
  /// peak (their stages' layers' states and kept activations), and the
  /// smallest such bound.
  int64_t peakBoundOver = 0, smallestPeakBoundOver = 0;
  int64_t statesOver = 0, activationsOver = 0;
  int64_t smallestPeakOver = 0;
  /// Serving plans that fit but exceed the time-per-output-token bound, and
  /// the shortest such time.
  int64_t overLatency = 0;
  double smallestTpotOver = 0;
  /// Plans not evaluated, and shapes not compiled, since a lower bound of
  /// their iteration exceeds the `exactTop`-th best found.
  int64_t boundSkipped = 0, shapesSkipped = 0;
  /// The steps without a pipeline compiled for the bounds.
  int64_t boundShapes = 0;
  /// CPU seconds of the threads that ran them, summed: per core. The
  /// bounds' compilations (one per shape without a pipeline) and
  /// evaluations.
  double compileSeconds = 0, evaluateSeconds = 0, boundSeconds = 0;
  /// Of the evaluation, that of each shape's first plan, which also derives
  /// what the shape's later plans reuse (docs/Explore.md).
  double firstPlanSeconds = 0;
};

/// What the model's sizes allow (heads, FFN widths, vocabulary, experts,
/// layer stack iterations), read from its bindings and layer stacks.
ModelLimits getModelLimits(ModuleOp model, const sym::Bindings &b);

/// Searches every plan of `model` on `r.gpus` GPUs. Fails (with a
/// diagnostic at the model) only on a model that is no training input;
/// plans that cannot be built are counted in `excluded`.
FailureOr<SearchResult>
searchPlans(ModuleOp model, const SearchRequest &r,
            const std::function<void(const SearchProgress &)> &progress = {});

/// The step of `plan`: `model` (with the request's batch and sequence)
/// through stage-train with the plan's options; errors at the model.
FailureOr<OwningOpRef<ModuleOp>>
compilePlan(ModuleOp model, const SearchRequest &r, const Plan &plan);

} // namespace mlir::stage::explore

#endif // STAGE_EXPLORE_SEARCH_H
