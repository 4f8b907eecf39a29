//===- GraphCleanup.cpp - A converted graph in the model's shapes ---------===//
//
// The two pattern sets run to a fixed point in a fixed order: a fused
// projection's split first (it erases ops after the one it starts from, so
// the scan starts again after each), then one sweep of the unflattening
// rewrites over the function; again until neither applies. The order makes
// the result independent of a worklist's order, and the driver, unlike
// MLIR's greedy one, never erases ops of their own (an unused weight stays
// a weight).
//
//===----------------------------------------------------------------------===//

#include "GraphCleanup.h"

#include "SplitFused.h"
#include "Unflatten.h"

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Rewrite/PatternApplicator.h"

using namespace mlir;
using namespace mlir::stage;

void mlir::stage::cleanUpConvertedGraph(func::FuncOp fn) {
  MLIRContext *ctx = fn.getContext();
  RewritePatternSet splits(ctx), unflatten(ctx);
  populateSplitFusedPatterns(splits);
  populateUnflattenPatterns(unflatten);
  FrozenRewritePatternSet frozenSplits(std::move(splits)),
      frozenUnflatten(std::move(unflatten));
  PatternApplicator splitter(frozenSplits), unflattener(frozenUnflatten);
  splitter.applyDefaultCostModel();
  unflattener.applyDefaultCostModel();
  PatternRewriter rewriter(ctx);
  auto apply = [&](PatternApplicator &a, Operation *op) {
    rewriter.setInsertionPoint(op);
    return succeeded(a.matchAndRewrite(op, rewriter));
  };

  Block &body = fn.getBody().front();
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : body)
      if (apply(splitter, &op)) {
        changed = true;
        break;
      }
    if (changed)
      continue;
    for (Operation &op : llvm::make_early_inc_range(body))
      changed |= apply(unflattener, &op);
  }
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isa<ReshapeOp, TransposeOp>(op) && op.use_empty())
      op.erase();
}
