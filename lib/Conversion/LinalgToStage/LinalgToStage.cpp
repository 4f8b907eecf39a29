//===- LinalgToStage.cpp - linalg on tensors to stage graphs --------------===//
//
// A function's ops become stage ops on `!stage.tensor` types (constant
// dimensions until `stage-symbolize` names them) through conversion
// patterns, one per kind of frontend op. Every linalg structured op is read
// through its indexing maps, iterator types and payload (Payload.cpp): the
// same pattern serves matmul, batch_matmul, contract, generic, map, reduce,
// transpose, broadcast and elementwise. Initializers (tensor.empty,
// linalg.fill) and the scalars a payload captures are read with the ops
// that use them and go once the conversion is done. The first error stops
// the conversion: the patterns convert nothing after it, so a user sees one
// message, at the op that has the problem.
//
//===----------------------------------------------------------------------===//

#include "LinalgToStage.h"

#include "GraphCleanup.h"
#include "LinalgLowering.h"
#include "WeightDiscovery.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

//===----------------------------------------------------------------------===//
// The patterns
//===----------------------------------------------------------------------===//

namespace {

/// Static ranked tensors are stage tensors of constant extents (typeFor
/// reports the others); the adaptors hand the patterns converted values.
struct StageTypeConverter : TypeConverter {
  StageTypeConverter() {
    addConversion([](Type t) { return t; });
    addConversion([](RankedTensorType t) -> std::optional<Type> {
      if (!t.hasStaticShape())
        return std::nullopt;
      SmallVector<Expr> dims;
      for (int64_t d : t.getShape())
        dims.push_back(Expr(d));
      return SymTensorType::get(t.getContext(), dims, t.getElementType());
    });
  }
};

/// What the patterns share.
struct ConversionState {
  /// The stage names of the shard grid's axes, in order.
  SmallVector<std::string> gridAxes;
  /// Tensor constants become buffers, or weights when they are in
  /// `weightConstants` (WeightDiscovery.h), named as `constantNames` says.
  llvm::DenseMap<Operation *, std::string> constantNames;
  llvm::DenseSet<Operation *> weightConstants;
  /// Set by the first error: the patterns convert nothing after it.
  bool failed = false;
  /// The functions built, to clean up once the conversion is done.
  SmallVector<func::FuncOp> converted;
};

/// A pattern of this conversion: it converts its op, or does not apply, or
/// reports an error that stops the conversion.
template <typename OpT> struct StagePattern : OpConversionPattern<OpT> {
  using Adaptor = typename OpConversionPattern<OpT>::OpAdaptor;
  StagePattern(const TypeConverter &types, MLIRContext *ctx,
               ConversionState &state)
      : OpConversionPattern<OpT>(types, ctx), state(state) {}

  LogicalResult matchAndRewrite(OpT op, Adaptor adaptor,
                                ConversionPatternRewriter &r) const final {
    if (state.failed)
      return failure();
    FailureOr<bool> done = convert(op, adaptor, r);
    if (failed(done))
      state.failed = true;
    return success(succeeded(done) && *done);
  }
  /// True when converted, false when the pattern does not apply, failure
  /// after an error.
  virtual FailureOr<bool> convert(OpT op, Adaptor adaptor,
                                  ConversionPatternRewriter &r) const = 0;

  ConversionState &state;
};

/// The casts that stand for a function's arguments until their users are
/// converted (signatureToStage): the weight or input each argument became.
struct ConvertArgumentCast : StagePattern<UnrealizedConversionCastOp> {
  using StagePattern::StagePattern;
  FailureOr<bool> convert(UnrealizedConversionCastOp op, OpAdaptor a,
                          ConversionPatternRewriter &r) const override {
    if (op.getNumOperands() != 1 ||
        !isa<SymTensorType>(op.getOperand(0).getType()))
      return false;
    r.replaceOp(op, a.getInputs());
    return true;
  }
};

struct ConvertReturn : StagePattern<func::ReturnOp> {
  using StagePattern::StagePattern;
  FailureOr<bool> convert(func::ReturnOp op, OpAdaptor a,
                          ConversionPatternRewriter &r) const override {
    if (llvm::all_of(op.getOperandTypes(), llvm::IsaPred<SymTensorType>))
      return false; // the converted return
    for (Value v : op.getOperands())
      if (failed(checkData(v, op)))
        return failure();
    r.replaceOpWithNewOp<func::ReturnOp>(op, a.getOperands());
    return true;
  }
};

/// A tensor constant is a weight when discovery says so (torch-mlir inlines
/// parameters as `dense_resource` constants), else a buffer: held in
/// memory, not trained. A scalar is read with the ops that use it (fills
/// and payloads, where canonicalization hoists them).
struct ConvertConstant : StagePattern<arith::ConstantOp> {
  using StagePattern::StagePattern;
  FailureOr<bool> convert(arith::ConstantOp c, OpAdaptor,
                          ConversionPatternRewriter &r) const override {
    auto t = dyn_cast<RankedTensorType>(c.getType());
    if (!t) {
      Operation *fn = c->getParentOp();
      if (llvm::all_of(c->getUsers(), [&](Operation *u) {
            return isa<linalg::FillOp>(u) || u->getParentOp() != fn;
          }))
        return false;
      return c->emitOpError("is a scalar used outside a payload");
    }
    FailureOr<SymTensorType> st = typeFor(t, c.getLoc());
    if (failed(st))
      return failure();
    std::string name = state.constantNames.lookup(c);
    bool weight = state.weightConstants.contains(c);
    GraphBuilder g(r, c.getLoc());
    r.replaceOp(c, g.param(name, st->getDims(), st->getElementType(), "",
                           weight ? ParamKind::weight : ParamKind::buffer));
    return true;
  }
};

struct ConvertSoftmax : StagePattern<linalg::SoftmaxOp> {
  using StagePattern::StagePattern;
  FailureOr<bool> convert(linalg::SoftmaxOp op, OpAdaptor a,
                          ConversionPatternRewriter &r) const override {
    if (failed(checkData(op.getInput(), op)))
      return failure();
    GraphBuilder g(r, op.getLoc());
    r.replaceOp(op, g.softmax(a.getInput(), op.getDimension()));
    return true;
  }
};

/// Every linalg structured op but the fill (an initializer).
struct ConvertLinalg : OpInterfaceConversionPattern<linalg::LinalgOp> {
  ConvertLinalg(const TypeConverter &types, MLIRContext *ctx,
                ConversionState &state)
      : OpInterfaceConversionPattern(types, ctx), state(state) {}
  LogicalResult matchAndRewrite(linalg::LinalgOp op, ArrayRef<Value> operands,
                                ConversionPatternRewriter &r) const override {
    if (state.failed || isa<linalg::FillOp, linalg::SoftmaxOp>(op))
      return failure();
    StageLowering lower(r, op.getLoc());
    FailureOr<LinalgLoops> l =
        lower.analyzeLinalg(op, operands.take_front(op.getNumDpsInputs()));
    if (failed(l)) {
      state.failed = true;
      return failure();
    }
    PayloadKind kind = l->payload.kind;
    FailureOr<Value> v = kind == PayloadKind::MulAdd
                             ? lower.convertContraction(*l)
                         : kind == PayloadKind::Sum || kind == PayloadKind::Max
                             ? lower.convertReduction(*l)
                             : lower.convertParallel(*l);
    if (failed(v)) {
      state.failed = true;
      return failure();
    }
    // Back to the output's layout: permuted loops, unit dims.
    r.replaceOp(op, lower.reshape(*v, l->resultType.getDims()));
    return success();
  }
  ConversionState &state;
};

template <typename OpT> struct ConvertReshape : StagePattern<OpT> {
  using StagePattern<OpT>::StagePattern;
  FailureOr<bool> convert(OpT op, typename StagePattern<OpT>::Adaptor a,
                          ConversionPatternRewriter &r) const override {
    if (failed(checkData(op.getSrc(), op)))
      return failure();
    FailureOr<SymTensorType> t = typeFor(op.getType(), op.getLoc());
    if (failed(t))
      return failure();
    StageLowering lower(r, op.getLoc());
    r.replaceOp(op, lower.reshape(a.getSrc(), t->getDims()));
    return true;
  }
};

/// A static, unit-stride slice of one dimension.
struct ConvertSlice : StagePattern<tensor::ExtractSliceOp> {
  using StagePattern::StagePattern;
  FailureOr<bool> convert(tensor::ExtractSliceOp s, OpAdaptor a,
                          ConversionPatternRewriter &r) const override {
    if (failed(checkData(s.getSource(), s)))
      return failure();
    if (!s.hasUnitStride() ||
        s.getSourceType().getRank() != s.getType().getRank() ||
        !s.getType().hasStaticShape() || !s.getStaticOffsets().size())
      return s->emitOpError("is not a static, unit-stride slice keeping the "
                            "rank; stage slices one dimension");
    ArrayRef<int64_t> offsets = s.getStaticOffsets(),
                      sizes = s.getStaticSizes();
    auto shape = s.getSourceType().getShape();
    int64_t dim = -1;
    for (unsigned d = 0; d < shape.size(); ++d) {
      if (offsets[d] == ShapedType::kDynamic ||
          sizes[d] == ShapedType::kDynamic)
        return s->emitOpError("has dynamic offsets or sizes");
      if (offsets[d] == 0 && sizes[d] == shape[d])
        continue;
      if (dim >= 0)
        return s->emitOpError("slices several dimensions; stage slices one");
      dim = d;
    }
    if (dim < 0) {
      r.replaceOp(s, a.getSource());
      return true;
    }
    GraphBuilder g(r, s.getLoc());
    r.replaceOp(
        s, g.slice(a.getSource(), dim, Expr(offsets[dim]), Expr(sizes[dim])));
    return true;
  }
};

struct ConvertConcat : StagePattern<tensor::ConcatOp> {
  using StagePattern::StagePattern;
  FailureOr<bool> convert(tensor::ConcatOp c, OpAdaptor a,
                          ConversionPatternRewriter &r) const override {
    for (Value v : c.getInputs())
      if (failed(checkData(v, c)))
        return failure();
    GraphBuilder g(r, c.getLoc());
    r.replaceOp(c, g.concat(a.getInputs(), c.getDim()));
    return true;
  }
};

/// A frontend's plan for a value: the sharding its defining op keeps
/// (`stage.plan_sharding`); the value itself passes through.
struct ConvertShard : StagePattern<shard::ShardOp> {
  using StagePattern::StagePattern;
  FailureOr<bool> convert(shard::ShardOp op, OpAdaptor a,
                          ConversionPatternRewriter &r) const override {
    if (failed(checkData(op.getSrc(), op)))
      return failure();
    Value v = a.getSrc();
    auto sharding = op.getSharding().getDefiningOp<shard::ShardingOp>();
    if (!sharding)
      return op->emitOpError("needs its sharding from a shard.sharding op");
    if (!sharding.getStaticHaloSizes().empty() ||
        !sharding.getStaticShardedDimsOffsets().empty() ||
        !sharding.getDynamicHaloSizes().empty() ||
        !sharding.getDynamicShardedDimsOffsets().empty())
      return sharding->emitOpError(
          "has halos or uneven offsets, which stage does not model");
    if (state.gridAxes.empty())
      return op->emitOpError("annotates a sharding, but the grid's axes have "
                             "no stage names: pass grid-axes=dp,tp,...");
    SmallVector<SmallVector<std::string>> dims;
    for (shard::GridAxesAttr axes : sharding.getSplitAxes().getAxes()) {
      SmallVector<std::string> names;
      for (int16_t a : axes.asArrayRef()) {
        if (a < 0 || size_t(a) >= state.gridAxes.size())
          return sharding->emitOpError("splits over grid axis ")
                 << a << ", which grid-axes does not name";
        names.push_back(state.gridAxes[a]);
      }
      dims.push_back(names);
    }
    unsigned rank = GraphBuilder::typeOf(v).getRank();
    if (dims.size() > rank)
      return op->emitOpError("shards ")
             << dims.size() << " dimensions of a rank-" << rank << " tensor";
    dims.resize(rank);
    // The value keeps this sharding: on the op that defines it.
    Operation *def = v.getDefiningOp();
    if (!def)
      return op->emitOpError("annotates a value without a defining op");
    setPlanSharding(def, ShardingAttr::get(op.getContext(), dims, {}));
    r.replaceOp(op, v);
    return true;
  }
};

/// An op no pattern converts, at a function's top level (payload ops are
/// read with their linalg op).
struct NoRule : RewritePattern {
  NoRule(MLIRContext *ctx, ConversionState &state)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/0, ctx), state(state) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &) const override {
    if (state.failed || !isa_and_nonnull<func::FuncOp>(op->getParentOp()) ||
        isa<StageDialect>(op->getDialect()) ||
        isa<func::ReturnOp, UnrealizedConversionCastOp, arith::ConstantOp,
            tensor::EmptyOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp,
            tensor::ExtractSliceOp, tensor::ConcatOp, linalg::SoftmaxOp,
            shard::ShardOp, shard::ShardingOp, shard::GridOp>(op) ||
        isa<linalg::LinalgOp>(op))
      return failure();
    op->emitOpError("cannot be converted to stage (no rule for '")
        << op->getName() << "')";
    state.failed = true;
    return failure();
  }
  ConversionState &state;
};

} // namespace

/// `fn` on stage tensors without arguments: each argument becomes a weight
/// (`stage.param`, `stage.group`) or an input at the start of the body, seen
/// by its users through a cast until they are converted.
/// The name of an argument's location (`loc("fc1.weight")`), if it has one.
static std::optional<std::string> locationName(BlockArgument arg) {
  if (auto name = dyn_cast<NameLoc>(arg.getLoc()))
    return name.getName().str();
  return std::nullopt;
}

/// Whether `weights=` names `arg`, by position or by location name.
static bool namedWeight(BlockArgument arg, ArrayRef<std::string> weights) {
  std::optional<std::string> name = locationName(arg);
  return llvm::any_of(weights, [&](const std::string &w) {
    return w == std::to_string(arg.getArgNumber()) || (name && w == *name);
  });
}

static LogicalResult signatureToStage(func::FuncOp fn,
                                      ArrayRef<std::string> weights) {
  SmallVector<Type> results;
  for (Type t : fn.getResultTypes()) {
    FailureOr<SymTensorType> st = typeFor(t, fn.getLoc());
    if (failed(st))
      return failure();
    results.push_back(*st);
  }
  Block *entry = &fn.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  GraphBuilder g(b, fn.getLoc());
  for (BlockArgument arg : fn.getArguments()) {
    FailureOr<SymTensorType> st = typeFor(arg.getType(), arg.getLoc());
    if (failed(st))
      return failure();
    g.setLoc(arg.getLoc());
    Value v;
    if (auto name = getArgWeightName(fn, arg.getArgNumber())) {
      auto group = getArgWeightGroup(fn, arg.getArgNumber());
      v = g.param(name.getValue(), st->getDims(), st->getElementType(),
                  group ? group.getValue() : "");
    } else if (namedWeight(arg, weights)) {
      v = g.param(locationName(arg).value_or(
                      "arg" + std::to_string(arg.getArgNumber())),
                  st->getDims(), st->getElementType(), "");
    } else {
      auto input = getArgInputName(fn, arg.getArgNumber());
      v = g.input(input ? input.getValue().str()
                        : "arg" + std::to_string(arg.getArgNumber()),
                  st->getDims(), st->getElementType());
    }
    if (ArrayAttr dims = getArgDimNames(fn, arg.getArgNumber()))
      setDimNames(v.getDefiningOp(), dims);
    arg.replaceAllUsesWith(
        UnrealizedConversionCastOp::create(b, arg.getLoc(), arg.getType(), v)
            .getResult(0));
  }
  entry->eraseArguments(0, entry->getNumArguments());
  fn.setType(b.getFunctionType({}, results));
  fn.removeArgAttrsAttr();
  fn.removeResAttrsAttr();
  fn.setSymVisibilityAttr(nullptr);
  return success();
}

/// The weight arguments of `fn` (as `weights=` entries) and its weight
/// constants (into `state`), found without annotations where none name
/// them (docs/Frontends.md): arguments when the function annotates none
/// and `weights=` is not given; constants always. A note names them.
static SmallVector<std::string> findWeights(func::FuncOp fn,
                                            ArrayRef<std::string> weights,
                                            ConversionState &state) {
  ActivationDims dims(fn);
  SmallVector<std::string> fnWeights(weights.begin(), weights.end());
  SmallVector<std::string> found;
  if (weights.empty() && hasNoArgumentAnnotations(fn))
    for (BlockArgument a : fn.getArguments())
      if (dims.isWeight(a)) {
        fnWeights.push_back(std::to_string(a.getArgNumber()));
        found.push_back(
            locationName(a).value_or("arg" + std::to_string(a.getArgNumber())));
      }
  fn.walk([&](arith::ConstantOp c) {
    if (!isa<RankedTensorType>(c.getType()))
      return;
    std::string name = getConstantName(c, int64_t(state.constantNames.size()));
    state.constantNames[c] = name;
    if (mayBeWeightConstant(c) && dims.isWeight(c)) {
      state.weightConstants.insert(c);
      found.push_back(name);
    }
  });
  if (!found.empty())
    fn->getContext()->getDiagEngine().emit(fn.getLoc(),
                                           DiagnosticSeverity::Note)
        << "weights found without annotations in '" << fn.getSymName()
        << "': " << llvm::join(found, ", ")
        << " (floating-point tensors without the batch and sequence "
           "dimensions, read as a projection, scale or bias reads them; "
           "annotate them, or name the weight arguments with "
           "--convert-linalg-to-stage=\"weights=...\", to choose otherwise)";
  return fnWeights;
}

LogicalResult
mlir::stage::convertLinalgFunctions(ModuleOp module,
                                    ArrayRef<std::string> gridAxes,
                                    ArrayRef<std::string> weights) {
  MLIRContext *ctx = module.getContext();
  ConversionState state;
  state.gridAxes.assign(gridAxes.begin(), gridAxes.end());
  ConversionTarget target(*ctx);
  target.addLegalDialect<StageDialect>();
  // A return is converted once what it returns is. Nothing else is
  // marked: what no pattern converts is left to NoRule's error, and after
  // the first error everything counts as legal, so that the conversion's
  // own messages do not repeat it.
  target.addDynamicallyLegalOp<func::ReturnOp>([&](func::ReturnOp op) {
    return state.failed ||
           llvm::all_of(op.getOperandTypes(), llvm::IsaPred<SymTensorType>);
  });
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    // Every `weights=` entry names an argument of the function.
    for (const std::string &w : weights)
      if (llvm::none_of(fn.getArguments(), [&](BlockArgument a) {
            return namedWeight(a, w);
          }))
        return fn.emitError("weights=")
               << w << " names no argument of '" << fn.getSymName()
               << "' (a position from 0 to " << fn.getNumArguments() - 1
               << ", or the name of an argument's location)";
    SmallVector<std::string> fnWeights = findWeights(fn, weights, state);
    if (failed(signatureToStage(fn, fnWeights)))
      return failure();
    state.converted.push_back(fn);
  }
  StageTypeConverter types;
  RewritePatternSet patterns(ctx);
  patterns
      .add<ConvertArgumentCast, ConvertReturn, ConvertConstant, ConvertSoftmax,
           ConvertLinalg, ConvertReshape<tensor::ExpandShapeOp>,
           ConvertReshape<tensor::CollapseShapeOp>, ConvertSlice, ConvertConcat,
           ConvertShard>(types, ctx, state);
  patterns.add<NoRule>(ctx, state);
  {
    // After the first error, what the conversion then says (values it could
    // not resolve around the ops left unconverted) only repeats it.
    ScopedDiagnosticHandler quiet(
        ctx, [&](Diagnostic &) { return success(state.failed); });
    if (failed(applyPartialConversion(module, target, std::move(patterns))) ||
        state.failed)
      return failure();
  }
  for (func::FuncOp fn : state.converted) {
    // What is left of the frontend is dead: initializers, captured scalars,
    // shardings.
    Block &body = fn.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (!isa<StageDialect>(op.getDialect()) && !isa<func::ReturnOp>(op) &&
          op.use_empty())
        op.erase();
    cleanUpConvertedGraph(fn);
    // Layout changes nothing reads (a unit dimension added and removed).
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isa<ReshapeOp, TransposeOp, BroadcastOp>(op) && op.use_empty())
        op.erase();
  }
  return success();
}
