//===- ParameterAnalysis.cpp - Counting the weights of a model ------------===//

#include "Stage/Analysis/ParameterAnalysis.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::stage;

ParamOp mlir::stage::getSourceParam(Value v) {
  while (true) {
    if (auto p = v.getDefiningOp<ParamOp>())
      return p;
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg)
      return {};
    auto rep = dyn_cast<RepeatOp>(arg.getOwner()->getParentOp());
    if (!rep || arg.getArgNumber() < rep.getNumCarried())
      return {};
    v = rep.getSlices()[arg.getArgNumber() - rep.getNumCarried()];
  }
}

/// A weight's identity: its name, and for a stage's share of a layer stack
/// (its leading dimension is the count of one of the stage's repeats) the
/// stage too (DualPipe's mirrored copy of a stage holds the same weights).
static std::string weightKey(ParamOp p) {
  auto stage = p->getParentOfType<PipelineStageOp>();
  auto t = cast<SymTensorType>(p.getType());
  if (!stage || t.getRank() == 0)
    return p.getName().str();
  bool stacked = false;
  stage.walk([&](RepeatOp rep) {
    stacked |= rep.getCount().getValue() == t.getDim(0);
  });
  if (!stacked)
    return p.getName().str();
  int64_t index = stage.getIndex();
  auto pipe = stage->getParentOfType<PipelineOp>();
  if (pipe && isMirrored(pipe.getSchedule()))
    index %= pipe.getNumPhysicalStages();
  return p.getName().str() + "@" + std::to_string(index);
}

FailureOr<ParameterCounts> mlir::stage::countParameters(Operation *fn) {
  ParameterCounts c;
  llvm::StringSet<> seen, inContraction;
  std::optional<sym::Expr> k, e;
  fn->walk([&](Operation *op) {
    if (auto topk = dyn_cast<TopKOp>(op))
      k = topk.getK().getValue();
    if (auto d = dyn_cast<DispatchOp>(op))
      e = d.getResult().getType().getDim(0);
    if (auto einsum = dyn_cast<EinsumOp>(op))
      for (Value in : einsum.getInputs())
        if (ParamOp p = getSourceParam(in))
          if (p.getKind() == ParamKind::weight &&
              inContraction.insert(weightKey(p)).second)
            c.inContractions +=
                cast<SymTensorType>(p.getType()).getNumElements();
    auto p = dyn_cast<ParamOp>(op);
    if (!p || p.getKind() != ParamKind::weight ||
        !seen.insert(weightKey(p)).second)
      return;
    sym::Expr n = cast<SymTensorType>(p.getType()).getNumElements();
    StringRef group = p.getGroup().value_or("");
    c.total += n;
    if (group == "embedding")
      c.embedding += n;
    else if (group == "attention")
      c.attention += n;
    else if (group == "ssm")
      c.ssm += n;
    else if (group == "expert")
      c.expert += n;
    else
      c.dense += n;
  });
  c.hasExperts = !c.expert.isZero();
  c.activePerToken = c.total - c.expert;
  c.knowsActive = !c.hasExperts || (k && e);
  if (c.hasExperts && c.knowsActive)
    c.activePerToken += (c.expert * *k).divExact(*e);
  return c;
}
