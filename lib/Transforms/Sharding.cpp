//===- Sharding.cpp - Sharding annotations on values ----------------------===//

#include "Stage/Transforms/Sharding.h"

using namespace mlir;
using namespace mlir::stage;

static ShardingAttr nth(Attribute list, unsigned i) {
  auto arr = dyn_cast_or_null<ArrayAttr>(list);
  if (!arr || i >= arr.size())
    return {};
  return dyn_cast<ShardingAttr>(arr[i]);
}

static ArrayAttr toArray(MLIRContext *ctx, ArrayRef<ShardingAttr> s) {
  SmallVector<Attribute> attrs(s.begin(), s.end());
  return ArrayAttr::get(ctx, attrs);
}

ShardingAttr mlir::stage::getSharding(Value v) {
  if (auto r = dyn_cast<OpResult>(v))
    return nth(r.getOwner()->getAttr(kShardingAttrName), r.getResultNumber());
  auto arg = cast<BlockArgument>(v);
  Operation *owner = arg.getOwner()->getParentOp();
  if (!owner)
    return {};
  auto regions = dyn_cast_or_null<ArrayAttr>(owner->getAttr(kArgShardingAttrName));
  unsigned region = arg.getOwner()->getParent()->getRegionNumber();
  if (!regions || region >= regions.size())
    return {};
  return nth(regions[region], arg.getArgNumber());
}

void mlir::stage::setResultShardings(Operation *op,
                                     ArrayRef<ShardingAttr> shardings) {
  op->setAttr(kShardingAttrName, toArray(op->getContext(), shardings));
}

void mlir::stage::setArgShardings(Operation *op, unsigned region,
                                  ArrayRef<ShardingAttr> shardings) {
  MLIRContext *ctx = op->getContext();
  SmallVector<Attribute> regions(op->getNumRegions(), ArrayAttr::get(ctx, {}));
  if (auto old = dyn_cast_or_null<ArrayAttr>(op->getAttr(kArgShardingAttrName)))
    for (auto [i, a] : llvm::enumerate(old))
      regions[i] = a;
  regions[region] = toArray(ctx, shardings);
  op->setAttr(kArgShardingAttrName, ArrayAttr::get(ctx, regions));
}

ShardingAttr mlir::stage::getOperandSharding(Operation *op, unsigned i) {
  return nth(op->getAttr(kOperandShardingAttrName), i);
}

void mlir::stage::setOperandShardings(Operation *op,
                                      ArrayRef<ShardingAttr> shardings) {
  op->setAttr(kOperandShardingAttrName, toArray(op->getContext(), shardings));
}

ShardingAttr mlir::stage::getNaturalSharding(Operation *op, unsigned i) {
  if (ShardingAttr s = nth(op->getAttr(kNaturalShardingAttrName), i))
    return s;
  return nth(op->getAttr(kShardingAttrName), i);
}

SymTensorType mlir::stage::getLocalType(SymTensorType global,
                                        ShardingAttr sharding) {
  if (!sharding)
    return global;
  SmallVector<sym::Expr> dims = global.getDims();
  for (unsigned d = 0; d < dims.size() && d < sharding.getRank(); ++d)
    dims[d] = dims[d].divExact(sharding.getSplitFactor(d));
  return global.withDims(dims);
}

void mlir::stage::clearShardings(Operation *root) {
  root->walk([](Operation *op) {
    for (StringRef name : {kShardingAttrName, kNaturalShardingAttrName,
                           kOperandShardingAttrName, kArgShardingAttrName})
      op->removeAttr(name);
  });
}

GridOp mlir::stage::getGrid(ModuleOp module) {
  for (auto g : module.getOps<GridOp>())
    return g;
  return {};
}
