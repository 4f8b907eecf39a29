//===- WeightDiscovery.cpp - Weights of a frontend that annotates none ----===//

#include "WeightDiscovery.h"

#include "Payload.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;
using namespace mlir::stage;

unsigned ActivationDims::id(Value v, unsigned dim) {
  auto [it, inserted] = ids.try_emplace({v, dim}, 0);
  if (inserted) {
    it->second = fresh();
    classes.insert(it->second);
  }
  return it->second;
}

ActivationDims::ActivationDims(func::FuncOp fn) {
  auto rank = [](Value v) -> int64_t {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t ? t.getRank() : -1;
  };
  // A unit dimension joins nothing: reshapes add and drop them anywhere
  // (TOSA's [4, 256, 512] -> [1, 1024, 512] and a weight's [1, 512, 1408]
  // would otherwise make the weight's width a batch dimension).
  auto unit = [](Value v, int64_t d) {
    return cast<RankedTensorType>(v.getType()).getDimSize(d) == 1;
  };
  std::vector<Value> results; // of linalg ops, whose dimensions are counted
  fn.walk([&](Operation *op) {
    if (auto l = dyn_cast<linalg::LinalgOp>(op)) {
      // Each operand's dimension is the loop its indexing map names; a
      // result's, its init's.
      SmallVector<unsigned> loops;
      for (unsigned d = 0; d < l.getNumLoops(); ++d)
        loops.push_back(fresh()), classes.insert(loops.back());
      auto join = [&](Value v, AffineMap map) {
        for (auto [i, e] : llvm::enumerate(map.getResults()))
          if (auto d = dyn_cast<AffineDimExpr>(e); d && !unit(v, i))
            classes.unionSets(id(v, unsigned(i)), loops[d.getPosition()]);
      };
      for (OpOperand &o : op->getOpOperands())
        if (rank(o.get()) >= 0)
          join(o.get(), l.getMatchingIndexingMap(&o));
      // Fills, copies, transposes and broadcasts move data: their results
      // are not counted (a weight's transpose is no activation).
      bool moves =
          isa<linalg::FillOp>(op) ||
          (op->getNumRegions() == 1 && !op->getRegion(0).empty() &&
           classifyPayload(op->getRegion(0).front(), l.getNumDpsInputs())
                   .kind == PayloadKind::Copy);
      for (auto [r, init] : llvm::zip(op->getResults(), l.getDpsInitsMutable()))
        if (rank(r) >= 0) {
          join(r, l.getMatchingIndexingMap(&init));
          if (!moves)
            results.push_back(r);
        }
      return;
    }
    // A reshape joins each group of dimensions with the one it becomes.
    auto joinGroups = [&](Value whole, Value parts,
                          ArrayRef<ReassociationIndices> groups) {
      for (auto [g, group] : llvm::enumerate(groups))
        for (int64_t p : group)
          if (!unit(parts, p) || group.size() == 1)
            classes.unionSets(id(whole, unsigned(g)), id(parts, unsigned(p)));
    };
    if (auto c = dyn_cast<tensor::CollapseShapeOp>(op))
      return joinGroups(c.getResult(), c.getSrc(), c.getReassociationIndices());
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(op))
      return joinGroups(e.getSrc(), e.getResult(), e.getReassociationIndices());
    // Slices, concatenations and casts keep each dimension where it is.
    if (isa<tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::ConcatOp,
            tensor::CastOp>(op))
      for (Value r : op->getResults())
        for (Value o : op->getOperands())
          if (rank(o) >= 0 && rank(o) == rank(r))
            for (unsigned d = 0; d < unsigned(rank(r)); ++d)
              classes.unionSets(id(r, d), id(o, d));
  });
  // The batch: the dimension the most linalg results carry.
  llvm::DenseMap<unsigned, unsigned> carriers;
  for (Value r : results) {
    llvm::DenseSet<unsigned> seen;
    for (unsigned d = 0; d < unsigned(rank(r)); ++d)
      if (unsigned leader = classes.getLeaderValue(id(r, d));
          seen.insert(leader).second)
        ++carriers[leader];
  }
  unsigned most = 0;
  for (auto [leader, n] : carriers)
    most = std::max(most, n);
  llvm::DenseSet<unsigned> batch;
  for (auto [leader, n] : carriers)
    if (n == most)
      batch.insert(leader);
  // The data arguments carry the batch; their other dimensions are
  // activations too when at least half as many results carry them (the
  // sequence, which attention and routing results carry as well; not the
  // hidden size, which an FFN's results do not).
  activation = batch;
  for (BlockArgument a : fn.getArguments()) {
    llvm::DenseSet<unsigned> own;
    for (unsigned d = 0; d < unsigned(std::max<int64_t>(rank(a), 0)); ++d)
      if (auto it = ids.find({a, d}); it != ids.end())
        own.insert(classes.getLeaderValue(it->second));
    if (llvm::none_of(own, [&](unsigned l) { return batch.contains(l); }))
      continue;
    for (unsigned l : own)
      if (2 * carriers.lookup(l) >= most)
        activation.insert(l);
  }
}

bool ActivationDims::carriesActivations(Value v) const {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return false;
  for (unsigned d = 0; d < t.getRank(); ++d) {
    auto it = ids.find({v, d});
    if (it != ids.end() &&
        activation.contains(classes.getLeaderValue(it->second)))
      return true;
  }
  return false;
}

/// Whether `use` reads its operand as a weight acts: contracted with
/// another (a projection), or added or multiplied elementwise (a bias, a
/// norm's scale); a reshape, slice, transpose or broadcast passes the
/// question on to its users.
static bool readsAsWeight(OpOperand &use) {
  Operation *user = use.getOwner();
  auto passOn = [&] {
    return llvm::all_of(user->getResults(), [](Value r) {
      return !r.use_empty() && llvm::all_of(r.getUses(), readsAsWeight);
    });
  };
  if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp, tensor::CastOp,
          tensor::ExtractSliceOp>(user))
    return passOn();
  auto l = dyn_cast<linalg::LinalgOp>(user);
  if (!l || !l.isDpsInput(&use) || l->getNumRegions() != 1 ||
      l->getRegion(0).empty())
    return false;
  Payload p = classifyPayload(l->getRegion(0).front(), l.getNumDpsInputs());
  if (p.kind == PayloadKind::Copy)
    return passOn();
  return p.kind == PayloadKind::MulAdd ||
         (p.kind == PayloadKind::Elementwise &&
          (p.ewise == EwiseKind::add || p.ewise == EwiseKind::mul));
}

bool ActivationDims::isWeight(Value v) const {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType()) && !v.use_empty() &&
         !carriesActivations(v) && llvm::all_of(v.getUses(), readsAsWeight);
}

bool mlir::stage::hasNoArgumentAnnotations(func::FuncOp fn) {
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (getArgWeightName(fn, i) || getArgInputName(fn, i))
      return false;
  return true;
}

std::string mlir::stage::getConstantName(arith::ConstantOp c, int64_t index) {
  if (auto loc = dyn_cast<NameLoc>(c.getLoc()))
    return loc.getName().str();
  if (auto r = dyn_cast<DenseResourceElementsAttr>(c.getValue()))
    return r.getRawHandle().getKey().str();
  return "const." + std::to_string(index);
}

bool mlir::stage::mayBeWeightConstant(arith::ConstantOp c) {
  if (!isa<RankedTensorType>(c.getType()))
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  return !dense || !dense.isSplat();
}
