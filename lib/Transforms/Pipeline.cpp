//===- Pipeline.cpp - Layers to pipeline stages ---------------------------===//
//
// Splits a forward program into `pp * v` stages of consecutive decoder
// layers (the embedding with the first, the head and loss with the last),
// balanced by their forward cost or as listed. Each stage is a
// self-contained region: its weights, its share of each layer stack (a
// shorter `stage.repeat`), and a send/recv pair per value crossing to a later
// stage. Running before autodiff, the backward's sends and receives of
// gradients follow from the forward ones.
//
//===----------------------------------------------------------------------===//

#include "Stage/Transforms/Passes.h"

#include "FunctionInputs.h"
#include "OptionString.h"

#include "PlanSetup.h"

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#include <map>

namespace mlir::stage {
#define GEN_PASS_DEF_STAGEPIPELINE
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;

namespace {

struct Run {
  RepeatOp op;
  int64_t begin, end; // global layer range
};

struct Chunk {
  int64_t begin, end; // global layer range
  PipelineStageOp op;
  OpBuilder builder;
  IRMapping leaves;                 // params and inputs cloned into it
  Operation *lastLeaf = nullptr;
  SmallVector<Value> recvs;         // receives, in channel order
  SmallVector<std::tuple<Value, int64_t, int64_t>> sends; // value, shift, channel
  explicit Chunk(MLIRContext *ctx) : builder(ctx) {}
};

/// Splits `runs` (layers, each with a cost) plus `pre`/`post` costs into
/// `k` contiguous chunks of at least one layer minimizing the largest chunk.
SmallVector<int64_t> balance(ArrayRef<double> layerCost, double pre,
                             double post, int64_t k) {
  int64_t n = layerCost.size();
  std::vector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + layerCost[i];
  auto cost = [&](int64_t c, int64_t a, int64_t b) {
    double x = prefix[b] - prefix[a];
    if (c == 0)
      x += pre;
    if (c == k - 1)
      x += post;
    return x;
  };
  // best[c][i]: the least maximum over chunks 0..c covering layers [0, i).
  const double inf = 1e300;
  std::vector<std::vector<double>> best(k, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> cut(k, std::vector<int64_t>(n + 1, 0));
  for (int64_t i = 1; i <= n; ++i)
    best[0][i] = cost(0, 0, i);
  for (int64_t c = 1; c < k; ++c)
    for (int64_t i = c + 1; i <= n; ++i)
      for (int64_t j = c; j < i; ++j) {
        double m = std::max(best[c - 1][j], cost(c, j, i));
        if (m < best[c][i] - 1e-9 * std::max(1.0, m)) {
          best[c][i] = m;
          cut[c][i] = j;
        }
      }
  SmallVector<int64_t> sizes(k);
  int64_t i = n;
  for (int64_t c = k - 1; c > 0; --c) {
    sizes[c] = i - cut[c][i];
    i = cut[c][i];
  }
  sizes[0] = i;
  return sizes;
}

/// Under a V (zb-v, dualpipe-v), rank r runs chunks r and 2 pp - 1 - r; under
/// DualPipe stage r and the copy of stage pp - 1 - r. Moves single layers
/// across chunk boundaries while that lowers the ranks' sums, the largest
/// first, then the next (the embedding and the head both land on rank 0).
void balanceRanks(SmallVector<int64_t> &sizes, ArrayRef<double> layerCost,
                  double pre, double post, int64_t pp, bool mirrored) {
  int64_t k = int64_t(sizes.size());
  auto rankCosts = [&] {
    std::vector<double> rank(pp, 0);
    int64_t layer = 0;
    for (int64_t c = 0; c < k; ++c) {
      double x = c == 0 ? pre : c == k - 1 ? post : 0;
      for (int64_t i = 0; i < sizes[c]; ++i)
        x += layerCost[layer++];
      if (mirrored) {
        rank[c] += x;
        rank[pp - 1 - c] += x;
      } else {
        rank[getPhysicalStage(ScheduleKind::zb_v, pp, c)] += x;
      }
    }
    llvm::sort(rank, std::greater<>());
    return rank;
  };
  auto lower = [](const std::vector<double> &a, const std::vector<double> &b) {
    for (auto [x, y] : llvm::zip(a, b))
      if (std::abs(x - y) > 1e-9 * std::max(1.0, y))
        return x < y;
    return false;
  };
  std::vector<double> best = rankCosts();
  for (bool improved = true; improved;) {
    improved = false;
    for (int64_t c = 0; c + 1 < k; ++c)
      for (int64_t dir : {1, -1}) {
        // One layer from chunk c to c + 1, or back.
        int64_t from = dir > 0 ? c : c + 1, to = dir > 0 ? c + 1 : c;
        if (sizes[from] < 2)
          continue;
        --sizes[from];
        ++sizes[to];
        std::vector<double> cost = rankCosts();
        if (lower(cost, best)) {
          best = std::move(cost);
          improved = true;
        } else {
          ++sizes[from];
          --sizes[to];
        }
      }
  }
}

class Pipeliner {
public:
  Pipeliner(func::FuncOp fn, GridOp grid, int64_t pp, int64_t v,
            ScheduleKind schedule, const sym::Bindings &b)
      : fn(fn), grid(grid), pp(pp), v(v), schedule(schedule), bindings(b) {}

  LogicalResult run(ArrayRef<int64_t> userSizes);

private:
  Value fetch(Value v, int64_t chunk);
  Value cloneLeaf(Operation *leaf, int64_t chunk);
  Operation *cloneInto(Operation *op, int64_t chunk);
  LogicalResult splitRun(const Run &run);
  void markSharedWeights();
  void mirrorStages(OpBuilder &pipeBuilder);
  int64_t chunkOfLayer(int64_t layer) const {
    for (auto [j, c] : llvm::enumerate(chunks))
      if (layer >= c->begin && layer < c->end)
        return j;
    return chunks.size() - 1;
  }

  func::FuncOp fn;
  GridOp grid;
  int64_t pp, v;
  ScheduleKind schedule;
  const sym::Bindings &bindings;
  SmallVector<std::unique_ptr<Chunk>> chunks;
  /// Where each value of the original program now lives.
  DenseMap<Value, std::pair<int64_t, Value>> current;
  std::map<std::pair<void *, int64_t>, Value> received;
  int64_t channels = 0;
};

} // namespace

Value Pipeliner::cloneLeaf(Operation *leaf, int64_t chunk) {
  Chunk &c = *chunks[chunk];
  if (Value known = c.leaves.lookupOrNull(leaf->getResult(0)))
    return known;
  // Weights and inputs open the stage, in the order they are first used.
  OpBuilder b(fn.getContext());
  if (c.lastLeaf)
    b.setInsertionPointAfter(c.lastLeaf);
  else
    b.setInsertionPointToStart(&c.op.getBody().front());
  Operation *copy = b.clone(*leaf);
  c.lastLeaf = copy;
  c.leaves.map(leaf->getResult(0), copy->getResult(0));
  return copy->getResult(0);
}

Value Pipeliner::fetch(Value v, int64_t chunk) {
  Operation *def = v.getDefiningOp();
  if (def && isa<ParamOp, InputOp>(def) && def->getParentOp() == fn)
    return cloneLeaf(def, chunk);
  auto it = current.find(v);
  if (it == current.end())
    return v; // defined inside a region being cloned
  auto [src, value] = it->second;
  if (src == chunk)
    return value;
  auto key = std::make_pair(v.getAsOpaquePointer(), chunk);
  if (Value r = received[key])
    return r;
  // The value crosses to a later stage: send at the end of its stage,
  // receive at the start of this one.
  // The nearer way round the ring (the second arm of a V goes back: -1);
  // 0 at the turn of a V, both stages on one rank: handed over in memory.
  int64_t shift = (getPhysicalStage(schedule, pp, chunk) -
                   getPhysicalStage(schedule, pp, src) + pp) %
                  pp;
  if (2 * shift > pp)
    shift -= pp;
  int64_t channel = 2 * channels++;
  chunks[src]->sends.push_back({value, shift, channel});
  Chunk &dst = *chunks[chunk];
  OpBuilder b(fn.getContext());
  Block &body = dst.op.getBody().front();
  if (!dst.recvs.empty())
    b.setInsertionPointAfter(dst.recvs.back().getDefiningOp());
  else if (dst.lastLeaf)
    b.setInsertionPointAfter(dst.lastLeaf);
  else
    b.setInsertionPointToStart(&body);
  auto recv = RecvOp::create(b, v.getLoc(), v.getType(),
                             FlatSymbolRefAttr::get(grid.getSymNameAttr()),
                             b.getStrArrayAttr({"pp"}),
                             b.getI64IntegerAttr(-shift),
                             b.getI64IntegerAttr(channel));
  dst.recvs.push_back(recv);
  received[key] = recv;
  return recv;
}

Operation *Pipeliner::cloneInto(Operation *op, int64_t chunk) {
  IRMapping map;
  // Operands from outside (including those captured by nested regions).
  op->walk([&](Operation *inner) {
    for (Value operand : inner->getOperands()) {
      Operation *def = operand.getDefiningOp();
      bool local = def ? op->isAncestor(def)
                       : op->isAncestor(cast<BlockArgument>(operand)
                                            .getOwner()
                                            ->getParentOp());
      if (!local && !map.contains(operand))
        map.map(operand, fetch(operand, chunk));
    }
  });
  Operation *copy = chunks[chunk]->builder.clone(*op, map);
  for (auto [o, c] : llvm::zip(op->getResults(), copy->getResults()))
    current[o] = {chunk, c};
  return copy;
}

LogicalResult Pipeliner::splitRun(const Run &run) {
  RepeatOp rep = run.op;
  for (int64_t j = chunkOfLayer(run.begin); j < int64_t(chunks.size()); ++j) {
    Chunk &c = *chunks[j];
    int64_t a = std::max(run.begin, c.begin), b = std::min(run.end, c.end);
    if (a >= b)
      break;
    OpBuilder &builder = c.builder;
    MLIRContext *ctx = fn.getContext();
    // The first part starts from the repeat's inputs, the others from the
    // previous part's carried results.
    SmallVector<Value> inits;
    for (auto [i, init] : llvm::enumerate(rep.getInits()))
      inits.push_back(fetch(a == run.begin ? init : rep.getResult(i), j));
    SmallVector<Value> slices;
    sym::Expr count(b - a);
    for (Value stack : rep.getSlices()) {
      auto param = stack.getDefiningOp<ParamOp>();
      if (!param)
        return rep.emitOpError("slices something else than a weight stack; "
                               "stage-pipeline cannot split it");
      // The stage's share of the weight stack: the same weight, fewer layers.
      auto t = cast<SymTensorType>(param.getType());
      OpBuilder pb(ctx);
      if (c.lastLeaf)
        pb.setInsertionPointAfter(c.lastLeaf);
      else
        pb.setInsertionPointToStart(&c.op.getBody().front());
      auto share = ParamOp::create(pb, param.getLoc(),
                                   t.dropLeadingDim().stacked(count),
                                   param.getNameAttr(), param.getKindAttr(),
                                   param.getGroupAttr());
      share->setDiscardableAttrs(param->getDiscardableAttrDictionary());
      c.lastLeaf = share;
      slices.push_back(share);
    }
    SmallVector<Type> types(rep.getResultTypes());
    auto part = RepeatOp::create(builder, rep.getLoc(), types,
                                 ExprAttr::get(ctx, count), rep.getReverseAttr(), rep.getStepAttr(),
                                 inits, slices);
    if (int64_t period = getLayerPeriod(rep); period > 1)
      setLayerPeriod(part, period);
    IRMapping map;
    Block &src = rep.getBodyBlock();
    Block *body = new Block();
    part.getBody().push_back(body);
    for (BlockArgument arg : src.getArguments())
      map.map(arg, body->addArgument(arg.getType(), arg.getLoc()));
    src.walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        bool outside = !rep->isAncestor(operand.getDefiningOp()
                                            ? operand.getDefiningOp()
                                            : cast<BlockArgument>(operand)
                                                  .getOwner()
                                                  ->getParentOp());
        if (outside && !map.contains(operand))
          map.map(operand, fetch(operand, j));
      }
    });
    OpBuilder bb = OpBuilder::atBlockEnd(body);
    for (Operation &op : src)
      bb.clone(op, map);
    for (auto [o, r] : llvm::zip(rep.getResults(), part.getResults()))
      current[o] = {j, r};
  }
  return success();
}

/// A weight several stages use (a tied embedding, a block shared across
/// depth) is a copy in each: the copies say which stages hold it, so that
/// their gradients are summed (stage-sum-shared-gradients).
void Pipeliner::markSharedWeights() {
  for (auto p : fn.getBody().front().getOps<ParamOp>()) {
    if (p.getKind() != ParamKind::weight)
      continue;
    SmallVector<int64_t> holders;
    SmallVector<ParamOp> copies;
    for (auto [j, c] : llvm::enumerate(chunks))
      if (Value copy = c->leaves.lookupOrNull(p.getResult())) {
        holders.push_back(j);
        copies.push_back(copy.getDefiningOp<ParamOp>());
      }
    if (holders.size() > 1)
      for (ParamOp copy : copies)
        setHoldingStages(copy, holders);
  }
}

/// DualPipe's second copy: stage pp + j is stage j (its layers, its own copy
/// of the weights) fed from the other end, on rank pp - 1 - j, so its
/// messages go the other way round, on channels of their own.
void Pipeliner::mirrorStages(OpBuilder &pipeBuilder) {
  int64_t offset = 2 * channels;
  for (int64_t j = 0; j < pp; ++j) {
    auto copy = cast<PipelineStageOp>(pipeBuilder.clone(*chunks[j]->op));
    copy.setIndex(pp + j);
    copy.walk([&](Operation *op) {
      if (auto send = dyn_cast<SendOp>(op)) {
        send.setShift(-send.getShift());
        send.setChannel(send.getChannel() + offset);
      } else if (auto recv = dyn_cast<RecvOp>(op)) {
        recv.setShift(-recv.getShift());
        recv.setChannel(recv.getChannel() + offset);
      }
    });
  }
}

/// One function: the stage split, the layer runs of each stage and the
/// sends between them are decided together, in program order.
LogicalResult Pipeliner::run(ArrayRef<int64_t> userSizes) {
  Block &entry = fn.getBody().front();
  Operation *ret = entry.getTerminator();
  // The units stages split on: the iterations of the layer stacks (a
  // hybrid's period splits whole) and the layers outside any stack
  // (`stage.layer`), in program order.
  SmallVector<Run> runs;
  std::map<int64_t, int64_t> loneUnit; // model layer -> unit
  SmallVector<int64_t> unitLayers;     // the model layers each unit is
  int64_t period = 1;
  for (Operation &op : entry) {
    if (auto rep = dyn_cast<RepeatOp>(op)) {
      sym::Result<int64_t> n = rep.getCount().getValue().evaluate(bindings);
      if (!n)
        return rep.emitOpError("layer count: ") << n.error();
      int64_t begin = unitLayers.size();
      runs.push_back({rep, begin, begin + *n});
      unitLayers.append(*n, getLayerPeriod(rep));
      period = std::max(period, getLayerPeriod(rep));
    } else if (std::optional<int64_t> l = getModelLayer(&op)) {
      if (loneUnit.emplace(*l, int64_t(unitLayers.size())).second)
        unitLayers.push_back(1);
    }
  }
  int64_t layers = unitLayers.size();
  std::string units = period > 1
                          ? " layer stack iterations (a period of up to " +
                                std::to_string(period) +
                                " layers counts as one: stages split on period "
                                "boundaries)"
                          : " layers";
  // DualPipe splits the model into pp stages and mirrors them.
  int64_t k = isMirrored(schedule) ? pp : pp * v;
  if (layers == 0 && k > 1)
    return fn.emitOpError("has no stage.repeat layer stack for stage-pipeline "
                          "to split over ")
           << k
           << " stages (an imported flat graph: fold its layers first with "
              "--stage-fold-layers)";
  if (k > std::max<int64_t>(layers, 1))
    return fn.emitOpError("cannot be split into ")
           << k << " stages (pp=" << pp << ", " << v
           << " virtual stages each): it has " << layers << units;

  // Costs: each layer's forward FLOPs; what precedes the first stack goes
  // with the first stage, what follows the last with the last.
  auto flops = [&](Operation *op) {
    Cost c = isa<CostOpInterface>(op) ? cast<CostOpInterface>(op).getCost()
                                      : getTotalCost(op);
    sym::Result<sym::Rational> x = c.flops().evaluateRational(bindings);
    return x ? x->toDouble() : 0.0;
  };
  SmallVector<double> layerCost(layers, 0.0);
  double pre = 0, post = 0;
  bool seenLayer = false;
  for (Operation &op : entry.without_terminator()) {
    if (auto rep = dyn_cast<RepeatOp>(op)) {
      double each = flops(rep);
      for (const Run &r : runs)
        if (r.op == rep)
          for (int64_t i = r.begin; i < r.end; ++i)
            layerCost[i] = each;
      seenLayer = true;
      post = 0;
    } else if (std::optional<int64_t> l = getModelLayer(&op)) {
      if (isa<CostOpInterface>(op))
        layerCost[loneUnit[*l]] += flops(&op);
      seenLayer = true;
      post = 0;
    } else if (isa<CostOpInterface>(op)) {
      (seenLayer ? post : pre) += flops(&op);
    }
  }
  SmallVector<int64_t> sizes;
  if (!userSizes.empty()) {
    if (int64_t(userSizes.size()) != k)
      return fn.emitOpError("layers-per-stage lists ")
             << userSizes.size() << " stages but the pipeline has " << k;
    int64_t sum = 0;
    for (int64_t s : userSizes) {
      if (s < 1)
        return fn.emitOpError("layers-per-stage: every stage needs a layer");
      sum += s;
    }
    if (sum != layers)
      return fn.emitOpError("layers-per-stage sums to ")
             << sum << " but the model has " << layers << units;
    sizes.assign(userSizes.begin(), userSizes.end());
  } else if (layers == 0) {
    sizes = {0};
  } else {
    sizes = balance(layerCost, pre, post, k);
    if (isVShaped(schedule))
      balanceRanks(sizes, layerCost, pre, post, pp, isMirrored(schedule));
  }

  // The stages name the model's layers: a unit (a stack iteration) of a
  // hybrid's period holds the period's layers.
  SmallVector<int64_t> firstLayer = {0};
  for (int64_t n : unitLayers)
    firstLayer.push_back(firstLayer.back() + n);
  OpBuilder b(ret);
  auto pipe = PipelineOp::create(b, fn.getLoc(), schedule, v,
                                 b.getI64IntegerAttr(firstLayer.back()));
  Block *pipeBody = new Block();
  pipe.getBody().push_back(pipeBody);
  OpBuilder pb = OpBuilder::atBlockEnd(pipeBody);
  int64_t at = 0;
  for (int64_t j = 0; j < k; ++j) {
    auto c = std::make_unique<Chunk>(fn.getContext());
    c->begin = at;
    c->end = at + sizes[j];
    at = c->end;
    c->op = PipelineStageOp::create(
        pb, fn.getLoc(), j,
        pb.getDenseI64ArrayAttr({firstLayer[c->begin], firstLayer[c->end]}));
    Block *body = new Block();
    c->op.getBody().push_back(body);
    c->builder.setInsertionPointToEnd(body);
    chunks.push_back(std::move(c));
  }

  int64_t owner = 0;
  for (Operation &op : llvm::make_early_inc_range(entry.without_terminator())) {
    if (&op == pipe.getOperation())
      continue;
    if (isa<ParamOp, InputOp>(op))
      continue;
    if (auto rep = dyn_cast<RepeatOp>(op)) {
      for (const Run &r : runs)
        if (r.op == rep) {
          if (failed(splitRun(r)))
            return failure();
          owner = chunkOfLayer(r.end - 1);
        }
      continue;
    }
    if (std::optional<int64_t> l = getModelLayer(&op))
      owner = chunkOfLayer(loneUnit[*l]);
    cloneInto(&op, owner);
  }
  for (Value loss : ret->getOperands()) {
    int64_t j = current.count(loss) ? current[loss].first : k - 1;
    LossOp::create(chunks[j]->builder, loss.getLoc(), fetch(loss, j));
  }
  for (auto &c : chunks) {
    for (auto [value, shift, channel] : c->sends)
      SendOp::create(c->builder, fn.getLoc(), value,
                     FlatSymbolRefAttr::get(grid.getSymNameAttr()),
                     c->builder.getStrArrayAttr({"pp"}),
                     c->builder.getI64IntegerAttr(shift),
                     c->builder.getI64IntegerAttr(channel));
    YieldOp::create(c->builder, fn.getLoc());
  }
  markSharedWeights();
  if (isMirrored(schedule))
    mirrorStages(pb);

  // The function now only holds the pipeline. The old return goes first:
  // it reads the ops erased after it.
  OpBuilder rb(ret);
  auto empty = func::ReturnOp::create(rb, ret->getLoc());
  ret->erase();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(entry)))
    if (&op != pipe.getOperation() && &op != empty.getOperation())
      op.erase();
  fn.setFunctionType(FunctionType::get(fn.getContext(), {}, {}));
  return success();
}

namespace {
struct PipelinePass : mlir::stage::impl::StagePipelineBase<PipelinePass> {
  using StagePipelineBase::StagePipelineBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<ScheduleKind> parsed =
        parseEnumOption<ScheduleKind>(module, "stage-pipeline", "schedule",
                                      schedule, getMaxEnumValForScheduleKind());
    if (failed(parsed))
      return signalPassFailure();
    ScheduleKind kind = *parsed;
    int64_t v = virtualStages;
    if (v < 0) {
      emitOptionError(module)
          << "stage-pipeline: virtual-stages=" << v << " is not positive";
      return signalPassFailure();
    }
    if (kind == ScheduleKind::interleaved) {
      // Without a chunk count: two chunks per rank, as Megatron-LM's
      // examples use.
      if (v == 0)
        v = 2;
      if (v == 1) {
        emitOptionError(module)
            << "stage-pipeline: virtual-stages=1 with schedule=interleaved: "
               "one chunk per rank is the 1F1B schedule (schedule=1f1b); the "
               "interleaved schedule needs virtual-stages=2 or more (2 when "
               "not given)";
        return signalPassFailure();
      }
    } else if (isVShaped(kind)) {
      // The V: each rank runs two stages.
      if (v != 0 && v != 2) {
        emitOptionError(module)
            << "stage-pipeline: virtual-stages=" << v
            << " with schedule=" << stringifyScheduleKind(kind)
            << ": the V-shaped schedule runs exactly 2 virtual stages per "
               "rank";
        return signalPassFailure();
      }
      v = 2;
    } else if (v > 1) {
      emitOptionError(module) << "stage-pipeline: virtual-stages=" << v
                              << " needs schedule=interleaved";
      return signalPassFailure();
    } else {
      v = 1;
    }
    PlanRequest req;
    req.degrees = {{"pp", pp}};
    req.order = order;
    if (onlyIfSplit) {
      // One 1F1B stage is the program as it is.
      FailureOr<int64_t> stages = getRequestedDegree(module, "pp", pp);
      if (failed(stages))
        return signalPassFailure();
      if (*stages == 1 && kind == ScheduleKind::one_f_one_b) {
        if (!layersPerStage.empty()) {
          emitOptionError(module)
              << "stage-pipeline: layers-per-stage needs pp > 1: with pp=1 "
                 "every layer is on the one stage";
          return signalPassFailure();
        }
        return;
      }
    }
    FailureOr<ParallelPlan> plan = setUpPlan(module, req);
    if (failed(plan))
      return signalPassFailure();
    int64_t stages = plan->degreeOf("pp");
    if ((kind == ScheduleKind::interleaved || isVShaped(kind)) && stages < 2) {
      emitOptionError(module)
          << "stage-pipeline: the " << stringifyScheduleKind(kind)
          << " schedule needs pp >= 2";
      return signalPassFailure();
    }
    if (isMirrored(kind) && stages % 2 != 0) {
      emitOptionError(module)
          << "stage-pipeline: the " << stringifyScheduleKind(kind)
          << " schedule needs an even pp (rank r pairs with rank pp - 1 - r), "
             "not pp="
          << stages;
      return signalPassFailure();
    }
    if (stages == 1 && v == 1 && !layersPerStage.empty()) {
      emitOptionError(module)
          << "stage-pipeline: layers-per-stage needs pp > 1: with pp=1 every "
             "layer is on the one stage";
      return signalPassFailure();
    }
    SmallVector<int64_t> sizes(layersPerStage.begin(), layersPerStage.end());
    GridOp grid = getGrid(module);
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (fn.isExternal() || !fn.getOps<PipelineOp>().empty())
        continue;
      convertArgumentsToInputs(fn);
      Pipeliner p(fn, grid, stages, v, kind, plan->bindings);
      if (failed(p.run(sizes)))
        return signalPassFailure();
    }
  }
};
} // namespace
