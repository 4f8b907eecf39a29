//===- CommAnalysis.cpp - Communication of a rank per iteration -----------===//

#include "Stage/Analysis/CommAnalysis.h"

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

using namespace mlir;
using namespace mlir::stage;

SmallVector<ImplicitCollective>
mlir::stage::getImplicitCollectives(Operation *op) {
  auto ce = dyn_cast<CrossEntropyOp>(op);
  ArrayAttr axes = ce ? getVocabParallelAxes(ce) : ArrayAttr();
  if (!axes || axes.empty())
    return {};
  auto labels = ce.getLabels().getType();
  sym::Expr stat = labels.getNumElements() * sym::Expr(4);
  return SmallVector<ImplicitCollective>(3, ImplicitCollective{axes, stat});
}

/// What a ring all-reduce of `size` bytes among `n` ranks sends per rank.
static sym::Expr allReduceSent(const sym::Expr &n, const sym::Expr &size) {
  return sym::Expr(2) * (n - sym::Expr(1)).divExact(n) * size;
}

static sym::Expr computeSentBytes(CollectiveOpInterface comm) {
  Operation *op = comm.getOperation();
  sym::Expr size = comm.getCommBytes();
  sym::Expr n = comm.getGroupSize();
  sym::Expr share = (n - sym::Expr(1)).divExact(n);
  if (isa<AllReduceOp>(op))
    return allReduceSent(n, size);
  if (isa<ReduceScatterOp, AllToAllOp>(op))
    return share * size;
  if (isa<AllGatherOp>(op))
    return (n - sym::Expr(1)) * size;
  if (isa<SendOp>(op))
    return isLocalHandoff(op) ? sym::Expr() : size;
  return sym::Expr(); // recv, local_split
}

sym::Expr mlir::stage::getSentBytes(CollectiveOpInterface comm) {
  return memoizeSymbolic(&SymbolicCache::sentBytes, comm,
                         [&] { return computeSentBytes(comm); });
}

bool mlir::stage::isParameterGather(Operation *op) {
  auto gather = dyn_cast<AllGatherOp>(op);
  if (!gather)
    return false;
  Value v = gather.getInput();
  // Through a repeat's slice argument to the stack it slices.
  while (auto arg = dyn_cast<BlockArgument>(v)) {
    auto rep = dyn_cast<RepeatOp>(arg.getOwner()->getParentOp());
    if (!rep || arg.getArgNumber() < rep.getNumCarried())
      return false;
    v = rep.getSlices()[arg.getArgNumber() - rep.getNumCarried()];
  }
  return bool(v.getDefiningOp<ParamOp>());
}

bool mlir::stage::isGradientScatter(Operation *op) {
  if (!isa<ReduceScatterOp>(op))
    return false;
  Value r = op->getResult(0);
  return !r.use_empty() && llvm::all_of(r.getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (!isa<YieldOp>(user))
      return false;
    Operation *parent = user->getParentOp();
    if (auto rep = dyn_cast<RepeatOp>(parent))
      return use.getOperandNumber() >= rep.getNumCarried();
    auto loop = dyn_cast<MicrobatchesOp>(parent);
    return loop && user->getParentRegion() == &loop.getBackward();
  });
}

std::vector<CommVolume>
mlir::stage::getCommVolumes(ArrayRef<Operation *> roots) {
  std::vector<CommVolume> out;
  auto entry = [&](StringRef kind, ArrayAttr axes) -> CommVolume & {
    CommVolume v;
    v.kind = kind.str();
    for (Attribute a : axes)
      v.axes.push_back(cast<StringAttr>(a).getValue().str());
    auto it = llvm::find_if(out, [&](const CommVolume &o) {
      return o.kind == v.kind && o.axes == v.axes;
    });
    if (it != out.end())
      return *it;
    out.push_back(std::move(v));
    return out.back();
  };
  for (Operation *root : roots)
    walkWithCounts(root, [&](Operation *op, const Multiplicity &n) {
      for (const ImplicitCollective &c : getImplicitCollectives(op)) {
        CommVolume &v = entry("all_reduce", c.axes);
        v.count += n.count();
        v.messageBytes += n.of(c.bytes);
        v.sentBytes += n.of(allReduceSent(getGroupSize(c.axes), c.bytes));
      }
      auto comm = dyn_cast<CollectiveOpInterface>(op);
      if (!comm || isa<LocalSplitOp>(op) || isLocalHandoff(op))
        return;
      CommVolume &v = entry(op->getName().stripDialect(), comm.getAxesAttr());
      v.count += n.count();
      v.messageBytes += n.of(comm.getCommBytes());
      v.sentBytes += n.of(getSentBytes(comm));
    });
  return out;
}
