//===- CommAnalysis.cpp - Communication of a rank per iteration -----------===//

#include "Stage/Analysis/CommAnalysis.h"

#include "Stage/Analysis/CostAnalysis.h"

using namespace mlir;
using namespace mlir::stage;

sym::Expr mlir::stage::getSentBytes(CollectiveOpInterface comm) {
  Operation *op = comm.getOperation();
  sym::Expr size = comm.getCommBytes();
  sym::Expr n = comm.getGroupSize();
  sym::Expr share = (n - sym::Expr(1)).divExact(n);
  if (isa<AllReduceOp>(op))
    return sym::Expr(2) * share * size;
  if (isa<ReduceScatterOp, AllToAllOp>(op))
    return share * size;
  if (isa<AllGatherOp>(op))
    return (n - sym::Expr(1)) * size;
  if (isa<SendOp>(op))
    return size;
  return sym::Expr(); // recv, local_split
}

std::vector<CommVolume>
mlir::stage::getCommVolumes(ArrayRef<Operation *> roots) {
  std::vector<CommVolume> out;
  for (Operation *root : roots)
    walkWithCounts(root, [&](Operation *op, const sym::Expr &n) {
      auto comm = dyn_cast<CollectiveOpInterface>(op);
      if (!comm || isa<LocalSplitOp>(op))
        return;
      CommVolume v;
      v.kind = op->getName().stripDialect().str();
      for (Attribute a : comm.getAxesAttr())
        v.axes.push_back(cast<StringAttr>(a).getValue().str());
      auto it = llvm::find_if(out, [&](const CommVolume &o) {
        return o.kind == v.kind && o.axes == v.axes;
      });
      if (it == out.end()) {
        out.push_back(std::move(v));
        it = std::prev(out.end());
      }
      it->count += n;
      it->messageBytes += n * comm.getCommBytes();
      it->sentBytes += n * getSentBytes(comm);
    });
  return out;
}
