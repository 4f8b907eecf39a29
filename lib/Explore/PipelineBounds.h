//===- PipelineBounds.h - Bounds of a plan from its pipeline ----*- C++ -*-===//
//
// Lower bounds of a plan's peak memory and iteration before its shape is
// compiled (docs/Explore.md): from its step compiled without a pipeline,
// what each layer holds and takes under the plan's degrees; from the model
// split into the plan's pipeline (the stage-pipeline pass alone: the split
// does not depend on the degrees), which layers each stage holds, the most
// layers' activations it keeps at once as its schedule runs, and the layers
// a micro-batch passes before reaching it.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_EXPLORE_PIPELINEBOUNDS_H
#define STAGE_LIB_EXPLORE_PIPELINEBOUNDS_H

#include "Stage/Explore/PlanSpace.h"
#include "Stage/Support/SymExpr.h"
#include "Stage/Target/Report/StepEstimate.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <mutex>
#include <optional>
#include <tuple>

namespace mlir::stage::explore {

/// What one layer of the model's layer stack holds on a rank (bytes): its
/// model states, and its activations kept per micro-batch; and what its
/// forward and backward (with recomputation) steps take per micro-batch at
/// least (seconds; 0 where unknown). `layers`: the stack's count.
struct LayerProfile {
  double states = 0, keptPerMicrobatch = 0;
  double forward = 0, backward = 0;
  int64_t layers = 0;
};

/// The training step function of `step` (a module without a pipeline) and
/// the symbol counting its one layer stack. None when the model has several
/// stacks or a count that is not one symbol.
struct LayerStack {
  func::FuncOp step;
  std::string count;
};
std::optional<LayerStack> findLayerStack(ModuleOp step);

/// The layer profile of `step`, whose layer stack is `stack` and whose
/// stages' work under `b` is `work`: the change of its model states, kept
/// activations and work per layer. None when its memory does not grow
/// linearly.
std::optional<LayerProfile>
getLayerProfile(ModuleOp step, const LayerStack &stack, const sym::Bindings &b,
                const DeviceModel &device, const report::StagesWork &work);

/// Per physical stage of a plan's pipeline: the layers it holds; the most
/// layers' activations (per micro-batch) it keeps at once as its schedule
/// runs; the layers a micro-batch passes before its first chunk, and
/// whether its last step is that chunk's whole backward of the last
/// micro-batch (which then passes those layers backward).
struct StageLayers {
  int64_t held = 0, mostKept = 0, before = 0;
  bool endsWithFirstChunk = false;
};

/// The pipelines of `model`'s plans, split once per (pp, schedule, v) and
/// walked once per M.
class PipelineLayers {
public:
  PipelineLayers(ModuleOp model, sym::Bindings bindings)
      : model(model), bindings(std::move(bindings)) {}

  /// Splits `model` for every pipeline of `candidates` (stage-pipeline, on a
  /// copy). Runs the pass: call it on one thread, with no SymbolicCache
  /// alive (it would keep what it derives from the copies' ops). A split
  /// that fails reports to the context's handlers.
  void splitAll(const std::vector<Plan> &plans, ArrayRef<size_t> candidates);

  /// A lower bound of `p`'s peak memory per rank (bytes), or 0 where there
  /// is none (no split). Safe to call from several threads.
  double peakBound(const Plan &p, const LayerProfile &layer);
  /// A lower bound of `p`'s iteration (seconds) from the pipeline's fill
  /// and drain, or 0 where there is none (no split, or DualPipe, whose
  /// micro-batches enter from both ends). Safe to call from several
  /// threads.
  double iterationBound(const Plan &p, const LayerProfile &layer);

private:
  const std::vector<StageLayers> *getStages(const Plan &p);

  ModuleOp model;
  sym::Bindings bindings;
  std::mutex mutex;
  /// Per (pp, schedule, v): each chunk's layer count and physical stage,
  /// the schedule's v; empty when the model does not split.
  struct Split {
    std::vector<int64_t> layers, stage;
    int64_t virtualStages = 1;
  };
  std::map<std::tuple<int64_t, std::string, int64_t>, Split> splits;
  /// The stages of `p` when its split has `layers` layers in all (the
  /// profile's stack is the model's only one), else none.
  const std::vector<StageLayers> *getStages(const Plan &p, int64_t layers);
  std::map<std::tuple<int64_t, std::string, int64_t, int64_t>,
           std::vector<StageLayers>>
      stages;
};

} // namespace mlir::stage::explore

#endif // STAGE_LIB_EXPLORE_PIPELINEBOUNDS_H
