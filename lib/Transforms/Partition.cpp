//===- Partition.cpp - Collectives where shardings disagree ---------------===//

#include "Stage/Transforms/Passes.h"

#include "ShardingRules.h"

#include "Stage/Analysis/CommAnalysis.h"
#include "Stage/Dialect/Stage/IR/ShardingLayout.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseMap.h"

#include <map>

namespace mlir::stage {
#define GEN_PASS_DEF_STAGEPARTITION
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;

namespace {

/// Builds the chain of collectives that turns one sharding into another.
class Resharder {
public:
  Resharder(OpBuilder &b, Location loc, FlatSymbolRefAttr grid)
      : b(b), loc(loc), grid(grid) {}

  Value run(Value v, ShardingAttr from, ShardingAttr to) {
    MLIRContext *ctx = b.getContext();
    ShardingLayout cur = ShardingLayout::of(from),
                   want = ShardingLayout::of(to);
    // 1. Pending partial sums: reduce-scatter into the dimension the target
    //    splits by the axis, then all-reduce the rest.
    AxisList reduceAll;
    std::map<int, AxisList> scatter;
    for (const std::string &a : cur.partial) {
      if (llvm::is_contained(want.partial, a))
        continue;
      int d = want.dimOf(a);
      if (d >= 0 && cur.dimOf(a) < 0)
        scatter[d].push_back(a);
      else
        reduceAll.push_back(a);
    }
    auto dropPartial = [&](const AxisList &axes) {
      llvm::erase_if(cur.partial, [&](const std::string &a) {
        return llvm::is_contained(axes, a);
      });
    };
    // The reduce-scatters first: what the all-reduces then move is smaller.
    for (auto &[d, group] : scatter) {
      dropPartial(group);
      llvm::append_range(cur.dims[d], group);
      v = emit(ReduceScatterOp::create(b, loc, v.getType(), v, grid,
                                       axes(group), b.getI64IntegerAttr(d)),
               cur);
    }
    // Data-parallel reductions and model-parallel ones (the norms' weight
    // gradients under sequence parallelism) are separate collectives, as
    // Megatron-LM issues them.
    AxisList data, model;
    for (const std::string &a : reduceAll)
      (a == "dp" || a == "cp" || a == "ep" ? data : model).push_back(a);
    for (const AxisList &group : {data, model}) {
      if (group.empty())
        continue;
      dropPartial(group);
      v = emit(AllReduceOp::create(b, loc, v.getType(), v, grid, axes(group)),
               cur);
    }
    // 2. Splits the target does not have on a dimension: move them to the
    //    dimension the target splits instead (all-to-all), or gather them.
    //    The axes of a dimension form a set: the bytes moved do not depend
    //    on which of them is the outer one.
    auto has = [](const AxisList &l, const std::string &a) {
      return llvm::is_contained(l, a);
    };
    for (unsigned d = 0; d < cur.dims.size(); ++d) {
      AxisList extra;
      for (const std::string &a : cur.dims[d])
        if (!has(want.dims[d], a))
          extra.push_back(a);
      // Axes that move to another dimension go one by one; those that
      // leave are gathered in one collective over their combined group.
      AxisList gather;
      for (const std::string &a : extra) {
        llvm::erase(cur.dims[d], a);
        int to = want.dimOf(a);
        if (to < 0 || to == int(d)) {
          gather.push_back(a);
          continue;
        }
        cur.dims[to].push_back(a);
        v = emit(AllToAllOp::create(b, loc, v.getType(), v, grid, axes({a}),
                                    b.getI64IntegerAttr(to),
                                    b.getI64IntegerAttr(d)),
                 cur);
      }
      if (!gather.empty())
        v = emit(AllGatherOp::create(b, loc, v.getType(), v, grid,
                                     axes(gather), b.getI64IntegerAttr(d)),
                 cur);
    }
    // 3. Splits the target adds: each rank keeps its piece.
    for (unsigned d = 0; d < cur.dims.size(); ++d) {
      AxisList split;
      for (const std::string &a : want.dims[d])
        if (!has(cur.dims[d], a))
          split.push_back(a);
      if (split.empty())
        continue;
      llvm::append_range(cur.dims[d], split);
      v = emit(LocalSplitOp::create(b, loc, v.getType(), v, grid, axes(split),
                                    b.getI64IntegerAttr(d)),
               cur);
    }
    (void)ctx;
    return v;
  }

private:
  ArrayAttr axes(ArrayRef<std::string> names) {
    SmallVector<StringRef> refs(names.begin(), names.end());
    return b.getStrArrayAttr(refs);
  }
  Value emit(Operation *op, const ShardingLayout &l) {
    setResultShardings(op, {l.attr(b.getContext())});
    if (!first)
      first = op;
    return op->getResult(0);
  }

public:
  /// The first collective of the chain (the one reading the input).
  Operation *first = nullptr;

private:

  OpBuilder &b;
  Location loc;
  FlatSymbolRefAttr grid;
};

class Partitioner {
public:
  explicit Partitioner(FlatSymbolRefAttr grid) : grid(grid) {}

  void run(Block &block) {
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (Operation *op : ops)
      partitionOp(op);
  }

private:
  void partitionOp(Operation *op) {
    OpBuilder b(op);
    // The softmax statistics of logits split along the vocabulary are
    // all-reduced inside the op (docs/Sharding.md).
    if (auto ce = dyn_cast<CrossEntropyOp>(op))
      if (ShardingAttr s = getOperandSharding(op, 0); s && s.getRank())
        if (AxisList axes = s.getDimAxes(s.getRank() - 1); !axes.empty())
          setVocabParallelAxes(op, axes);
    for (OpOperand &use : op->getOpOperands()) {
      ShardingAttr need = getOperandSharding(op, use.getOperandNumber());
      ShardingAttr have = getSharding(use.get());
      if (!need || !have || need == have)
        continue;
      auto key = std::make_tuple(use.get(), need, op->getBlock());
      auto it = cache.find(key);
      if (it == cache.end()) {
        Resharder r(b, op->getLoc(), grid);
        it = cache.try_emplace(key, r.run(use.get(), have, need)).first;
      }
      use.set(it->second);
    }
    for (Region &region : op->getRegions())
      for (Block &block : region)
        run(block);
    // A result produced in another sharding than it keeps (a partial sum):
    // reshard it once, right after the op.
    if (hasNaturalShardings(op)) {
      b.setInsertionPointAfter(op);
      SmallVector<ShardingAttr> produced;
      for (unsigned i = 0; i < op->getNumResults(); ++i)
        produced.push_back(getNaturalSharding(op, i));
      for (unsigned i = 0; i < op->getNumResults(); ++i) {
        Value r = op->getResult(i);
        ShardingAttr kept = getSharding(r);
        if (!kept || kept == produced[i])
          continue;
        Resharder rs(b, op->getLoc(), grid);
        Value fresh = rs.run(r, produced[i], kept);
        if (rs.first)
          r.replaceAllUsesExcept(fresh, rs.first);
      }
      setResultShardings(op, produced);
      removeNaturalShardings(op);
    }
    // ZeRO 1 and 2: the weight is updated in shards, then gathered whole.
    if (auto step = dyn_cast<OptimizerStepOp>(op)) {
      Value w = step.getWeight(), whole = w;
      while (auto split = whole.getDefiningOp<LocalSplitOp>())
        whole = split.getInput();
      if (whole != w) {
        b.setInsertionPointAfter(op);
        Resharder rs(b, op->getLoc(), grid);
        rs.run(w, getSharding(w), getSharding(whole));
      }
    }
  }

  FlatSymbolRefAttr grid;
  llvm::DenseMap<std::tuple<Value, ShardingAttr, Block *>, Value> cache;
};

/// Every value takes the shape one rank holds.
static void localizeTypes(Operation *root) {
  auto localize = [](Value v, ShardingAttr s) {
    if (auto t = dyn_cast<SymTensorType>(v.getType()); t && s)
      v.setType(getLocalType(t, s));
  };
  root->walk([&](Operation *op) {
    // A cache remembers which of its entries a rank holds.
    if (auto cache = dyn_cast<KVCacheOp>(op))
      cache.setSplitAttr(getSharding(cache.getResult()));
    for (Value r : op->getResults())
      localize(r, getSharding(r));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          localize(arg, getSharding(arg));
  });
}

/// Every annotation fits its value (rank) and the grid (known axes): hand-written or foreign shardings are checked before any
/// collective is built from them.
static LogicalResult verifyShardings(ModuleOp module, GridOp grid) {
  SmallVector<StringRef> gridAxes;
  for (Attribute a : grid.getAxes())
    gridAxes.push_back(cast<StringAttr>(a).getValue());
  auto check = [&](Operation *op, Value v, ShardingAttr s,
                   StringRef what) -> LogicalResult {
    auto t = dyn_cast<SymTensorType>(v.getType());
    if (!s || !t)
      return success();
    if (s.getRank() != t.getRank())
      return op->emitOpError()
             << what << " has " << s.getRank() << " dimensions, its value "
             << t.getRank();
    SmallVector<std::string> all = s.getPartialAxes();
    for (unsigned d = 0; d < s.getRank(); ++d)
      llvm::append_range(all, s.getDimAxes(d));
    for (const std::string &a : all) {
      if (!llvm::is_contained(gridAxes, a))
        return op->emitOpError()
               << what << " names axis '" << a << "', which grid @"
               << grid.getSymName() << " does not have";
    }
    return success();
  };
  WalkResult r = module.walk([&](Operation *op) {
    for (OpResult res : op->getResults())
      if (failed(check(op, res, getSharding(res), "the sharding of result #" +
                                                      std::to_string(res.getResultNumber()))) ||
          failed(check(op, res, getNaturalSharding(op, res.getResultNumber()),
                       "the natural sharding of result #" +
                           std::to_string(res.getResultNumber()))))
        return WalkResult::interrupt();
    for (OpOperand &use : op->getOpOperands())
      if (failed(check(op, use.get(),
                       getOperandSharding(op, use.getOperandNumber()),
                       "the sharding needed of operand #" +
                           std::to_string(use.getOperandNumber()))))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (BlockArgument arg : region.getArguments())
        if (failed(check(op, arg, getSharding(arg),
                         "the sharding of block argument #" +
                             std::to_string(arg.getArgNumber()))))
          return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

struct PartitionPass
    : mlir::stage::impl::StagePartitionBase<PartitionPass> {
  using StagePartitionBase::StagePartitionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!overlap.empty()) {
      std::string why;
      FailureOr<OverlapKinds> kinds = parseOverlap(overlap, why);
      if (failed(kinds)) {
        emitOptionError(module) << "stage-partition: " << why;
        return signalPassFailure();
      }
      setOverlap(module, *kinds);
    }
    GridOp grid = getGrid(module);
    if (!grid) {
      module.emitError("stage-partition needs the shardings of stage-shard "
                       "(no stage.grid in the module)");
      return signalPassFailure();
    }
    if (failed(verifyShardings(module, grid)))
      return signalPassFailure();
    auto ref = FlatSymbolRefAttr::get(grid.getSymNameAttr());
    Partitioner p(ref);
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal())
        p.run(fn.getBody().front());
    localizeTypes(module);
    clearShardings(module);
  }
};
} // namespace
