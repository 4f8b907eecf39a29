//===- ExpertRouting.h - What routing does to an op's time -------*- C++ -*-===//
//
// The IR holds the mean load of every expert (tokens per expert on
// average, isPerExpertAverage), so FLOPs, bytes and traces are exact in
// totals. What the mean hides is in the time: a step reads only the
// weights of the experts its tokens reach (at small batch, far from all of
// them), and the rank with the most popular experts gets the most tokens.
// The time model (the report, the search, the traces' durations) applies
// both to the ops that hold per-expert rows, under the module's routing
// (Stage/Support/Routing.h).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_ANALYSIS_EXPERTROUTING_H
#define STAGE_ANALYSIS_EXPERTROUTING_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include <memory>
#include <optional>

namespace mlir::stage {

/// An op whose work routing decides: it holds per-expert rows.
struct RoutedOp {
  /// One expert's rows on average (tokens x K / E of the expert group).
  sym::Expr rowsPerExpert;
  /// Per execution, the bytes it moves for every expert of the rank
  /// whatever the tokens (an expert contraction's weight, or weight
  /// gradient): only the experts reached need them.
  sym::Expr expertBytes;
};
std::optional<RoutedOp> getRoutedOp(Operation *op);

/// The module's routing, numerically, for the time of routed ops.
class RoutingModel {
public:
  /// The routing of `op`'s module (uniform when it names none).
  explicit RoutingModel(Operation *op);
  ~RoutingModel();
  RoutingModel(RoutingModel &&);

  /// An op's work over its executions (contraction and other FLOPs,
  /// bytes), of which `expertBytes` for every expert, with `rows` per
  /// expert on average over `E` experts (K per token) on `ep` ranks: the
  /// busiest rank's, reading the experts it is expected to reach. Unchanged
  /// when a value is missing (NaN or not positive).
  void apply(double E, double K, double ep, double rows, double expertBytes,
             double &contraction, double &other, double &bytes) const;

  /// The expected fraction of `E` experts (K per token, `ep` ranks) whose
  /// weights a step of `rows` rows per expert reads, over all ranks.
  double reached(double E, double K, double ep, double rows) const;

  /// Both for `op`, its sizes and E, K and ep evaluated under `b`; `apply`
  /// of `runs` executions.
  void applyUnder(const sym::Bindings &b, const RoutedOp &op, double runs,
                  double &contraction, double &other, double &bytes) const;
  double reachedUnder(const sym::Bindings &b, const RoutedOp &op) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_EXPERTROUTING_H
