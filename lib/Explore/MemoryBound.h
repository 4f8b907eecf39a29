//===- MemoryBound.h - A lower bound of a plan's peak memory ----*- C++ -*-===//
//
// The plan search rules out a plan that cannot fit the device before
// compiling its shape (docs/Explore.md): from its step compiled without a
// pipeline, each layer's model states and kept activations under the
// plan's degrees; from the model split into the plan's pipeline (the
// stage-pipeline pass alone: the split does not depend on the degrees),
// which layers each stage holds and, walking its schedule, the most
// layers' activations it keeps at once.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_EXPLORE_MEMORYBOUND_H
#define STAGE_LIB_EXPLORE_MEMORYBOUND_H

#include "Stage/Explore/PlanSpace.h"
#include "Stage/Support/SymExpr.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <mutex>
#include <optional>
#include <tuple>

namespace mlir::stage::explore {

/// What one layer of the model's layer stack holds on a rank (bytes): its
/// model states, and its activations kept per micro-batch.
struct LayerMemory {
  double states = 0, keptPerMicrobatch = 0;
};

/// The layer memory of `step` (a training step without a pipeline) under
/// `b`: the change of its model states and kept activations per layer of
/// its one layer stack. None when the model has several stacks or a count
/// that is not one symbol, or when they do not grow linearly.
std::optional<LayerMemory> getLayerMemory(ModuleOp step,
                                          const sym::Bindings &b);

/// Per physical stage of a plan's pipeline: the layers it holds, and the
/// most layers' activations (per micro-batch) it keeps at once as its
/// schedule runs.
struct StageLayers {
  int64_t held = 0, mostKept = 0;
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
  double peakBound(const Plan &p, const LayerMemory &layer);

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
  std::map<std::tuple<int64_t, std::string, int64_t, int64_t>,
           std::vector<StageLayers>>
      stages;
};

} // namespace mlir::stage::explore

#endif // STAGE_LIB_EXPLORE_MEMORYBOUND_H
