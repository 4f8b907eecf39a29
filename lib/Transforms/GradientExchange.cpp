//===- GradientExchange.cpp - Gradients summed across pipeline stages -----===//

#include "GradientExchange.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

using namespace mlir;
using namespace mlir::stage;

ParamOp mlir::stage::getUpdatedParam(OptimizerStepOp step) {
  Value w = step.getWeight();
  while (auto split = w.getDefiningOp<LocalSplitOp>())
    w = split->getOperand(0);
  return w.getDefiningOp<ParamOp>();
}

int64_t mlir::stage::getFirstFreeChannel(PipelineOp pipe) {
  int64_t next = 0;
  pipe.walk([&](Operation *op) {
    if (auto send = dyn_cast<SendOp>(op))
      next = std::max<int64_t>(next, send.getChannel() + 1);
    else if (auto recv = dyn_cast<RecvOp>(op))
      next = std::max<int64_t>(next, recv.getChannel() + 1);
  });
  return next;
}

void mlir::stage::addPeerGradients(OpBuilder &b, OptimizerStepOp step,
                                   FlatSymbolRefAttr grid,
                                   ArrayRef<GradientPeer> peers) {
  Location loc = step.getLoc();
  Value own = step.getGrad();
  ArrayAttr pp = b.getStrArrayAttr({"pp"});
  // Every send first: each holder's sends wait on nothing it receives.
  for (const GradientPeer &p : peers)
    if (p.out >= 0)
      SendOp::create(b, loc, own, grid, pp, b.getI64IntegerAttr(p.shift),
                     b.getI64IntegerAttr(p.out));
  Value sum = own;
  for (const GradientPeer &p : peers) {
    if (p.in < 0)
      continue;
    auto other = RecvOp::create(b, loc, own.getType(), grid, pp,
                                b.getI64IntegerAttr(p.shift),
                                b.getI64IntegerAttr(p.in));
    sum = EwiseOp::create(b, loc, own.getType(), EwiseKind::add,
                          ValueRange{sum, other}, IntegerAttr());
  }
  step.getGradMutable().assign(sum);
}

int64_t mlir::stage::getRingShift(int64_t from, int64_t to, int64_t pp) {
  int64_t d = ((to - from) % pp + pp) % pp;
  // Halfway round, backwards to a lower rank (as a pipeline's gradients go).
  return 2 * d > pp || (2 * d == pp && to < from) ? d - pp : d;
}

LogicalResult mlir::stage::sumOverPipelines(
    ModuleOp module, function_ref<bool(PipelineOp)> applies,
    function_ref<LogicalResult(PipelineOp, FlatSymbolRefAttr)> sum) {
  GridOp grid = getGrid(module);
  WalkResult r = module.walk([&](PipelineOp pipe) {
    if (!applies(pipe))
      return WalkResult::advance();
    if (!grid) {
      pipe.emitOpError("needs the module's stage.grid");
      return WalkResult::interrupt();
    }
    if (failed(sum(pipe, FlatSymbolRefAttr::get(grid.getSymNameAttr()))))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}
