//===- ParameterAnalysis.h - Counting the weights of a model ----*- C++ -*-===//

#ifndef STAGE_ANALYSIS_PARAMETERANALYSIS_H
#define STAGE_ANALYSIS_PARAMETERANALYSIS_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

namespace mlir::stage {

/// The `stage.param` a value comes from, looking through the slice
/// arguments of `stage.repeat` bodies; null when it is not a weight.
ParamOp getSourceParam(Value v);

/// Parameter counts of a function, in elements. Every distinct weight
/// (`kind "weight"`, by name) counts once with all its dimensions (the layer
/// stack included). In a pipelined step each stage's share of a layer stack
/// is a weight of its own (the same name, other layers); a weight outside
/// the stacks that two stages hold (a tied embedding) counts once.
struct ParameterCounts {
  sym::Expr total;
  sym::Expr embedding; // group "embedding": token and position tables, LM head
  sym::Expr attention; // group "attention"
  sym::Expr ssm;       // group "ssm": state-space mixers
  sym::Expr expert;    // group "expert": routed experts
  sym::Expr dense;     // everything else: MLPs, norms, routers, shared experts
  /// Weights a token uses: all but the routed experts, plus K/E of them.
  /// Known when a stage.topk routes the tokens (not for a graph that routes
  /// by one-hot einsums, as GShard's form does).
  sym::Expr activePerToken;
  bool knowsActive = false;
  /// Weights that are an operand of some contraction (the FLOPs identity).
  sym::Expr inContractions;
  bool hasExperts = false;
};

/// The parameter counts of `function` (a func.func of stage ops).
FailureOr<ParameterCounts> countParameters(Operation *function);

} // namespace mlir::stage

#endif // STAGE_ANALYSIS_PARAMETERANALYSIS_H
