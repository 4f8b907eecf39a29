//===- StageAnnotations.cpp - The dialect's discardable attributes --------===//

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "Stage/Support/Routing.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::stage;

using Bindings = StageDialect::BindingsAttrHelper;
using Model = StageDialect::ModelAttrHelper;
using ShardingRules = StageDialect::ShardingRulesAttrHelper;
using Sharding = StageDialect::ShardingAttrHelper;
using ArgSharding = StageDialect::ArgShardingAttrHelper;
using OperandSharding = StageDialect::OperandShardingAttrHelper;
using NaturalSharding = StageDialect::NaturalShardingAttrHelper;
using PlanSharding = StageDialect::PlanShardingAttrHelper;
using Output = StageDialect::OutputAttrHelper;
using Recomputable = StageDialect::RecomputableAttrHelper;
using KeepsResult = StageDialect::RecomputeKeepsResultAttrHelper;
using Recompute = StageDialect::RecomputeAttrHelper;
using AttentionCore = StageDialect::AttentionCoreAttrHelper;
using LayerPeriod = StageDialect::LayerPeriodAttrHelper;
using ModelLayer = StageDialect::LayerAttrHelper;
using HeldBy = StageDialect::HeldByAttrHelper;
using RoutingName = StageDialect::RoutingAttrHelper;
using TokenFeedback = StageDialect::TokenFeedbackAttrHelper;
using VocabParallel = StageDialect::VocabParallelAttrHelper;
using Overlap = StageDialect::OverlapAttrHelper;
using Dims = StageDialect::DimsAttrHelper;
using Param = StageDialect::ParamAttrHelper;
using Group = StageDialect::GroupAttrHelper;
using Input = StageDialect::InputAttrHelper;

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

FailureOr<sym::Bindings>
mlir::stage::getModuleBindings(ModuleOp module,
                               const sym::Bindings &overrides) {
  sym::Bindings b;
  if (Attribute attr = module->getAttr(Bindings::getNameStr())) {
    auto dict = dyn_cast<DictionaryAttr>(attr);
    if (!dict)
      return module.emitError("'")
             << Bindings::getNameStr() << "' must be a dictionary of integers";
    for (NamedAttribute na : dict) {
      auto i = dyn_cast<IntegerAttr>(na.getValue());
      if (!i)
        return module.emitError("binding '")
               << na.getName().getValue() << "' must be an integer, got "
               << na.getValue();
      b[na.getName().getValue().str()] = i.getInt();
    }
  }
  for (const auto &[k, v] : overrides)
    b[k] = v;
  return b;
}

void mlir::stage::setModuleBindings(ModuleOp module, const sym::Bindings &b) {
  Builder builder(module.getContext());
  SmallVector<NamedAttribute> attrs;
  for (const auto &[k, v] : b)
    attrs.push_back(builder.getNamedAttr(k, builder.getI64IntegerAttr(v)));
  module->setAttr(Bindings::getNameStr(), builder.getDictionaryAttr(attrs));
}

void mlir::stage::setModelInfo(ModuleOp module, StringRef architecture,
                                int64_t contextLength) {
  Builder b(module.getContext());
  module->setAttr(
      Model::getNameStr(),
      b.getDictionaryAttr(
          {b.getNamedAttr("architecture", b.getStringAttr(architecture)),
           b.getNamedAttr("context", b.getI64IntegerAttr(contextLength))}));
}

std::optional<int64_t> mlir::stage::getModelContextLength(ModuleOp module) {
  auto model = module->getAttrOfType<DictionaryAttr>(Model::getNameStr());
  if (!model)
    return std::nullopt;
  if (auto c = model.getAs<IntegerAttr>("context"))
    return c.getInt();
  return std::nullopt;
}

DictionaryAttr mlir::stage::getShardingRules(ModuleOp module) {
  return module->getAttrOfType<DictionaryAttr>(ShardingRules::getNameStr());
}

StringRef mlir::stage::getShardingRulesAttrName() {
  return ShardingRules::getNameStr();
}

GridOp mlir::stage::getGrid(ModuleOp module) {
  for (auto g : module.getOps<GridOp>())
    return g;
  return {};
}

std::optional<ServingGroups> mlir::stage::getServingGroups(ModuleOp module) {
  ServingGroups g;
  for (auto m : module.getOps<ModuleOp>()) {
    if (m.getSymName() == ServingGroups::kPrefillGroup)
      g.prefill = m;
    else if (m.getSymName() == ServingGroups::kDecodeGroup)
      g.decode = m;
  }
  if (!g.prefill || !g.decode)
    return std::nullopt;
  return g;
}

//===----------------------------------------------------------------------===//
// Shardings
//===----------------------------------------------------------------------===//

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
    return nth(r.getOwner()->getAttr(Sharding::getNameStr()),
               r.getResultNumber());
  auto arg = cast<BlockArgument>(v);
  Operation *owner = arg.getOwner()->getParentOp();
  if (!owner)
    return {};
  auto regions =
      dyn_cast_or_null<ArrayAttr>(owner->getAttr(ArgSharding::getNameStr()));
  unsigned region = arg.getOwner()->getParent()->getRegionNumber();
  if (!regions || region >= regions.size())
    return {};
  return nth(regions[region], arg.getArgNumber());
}

void mlir::stage::setResultShardings(Operation *op,
                                     ArrayRef<ShardingAttr> shardings) {
  op->setAttr(Sharding::getNameStr(), toArray(op->getContext(), shardings));
}

void mlir::stage::setArgShardings(Operation *op, unsigned region,
                                  ArrayRef<ShardingAttr> shardings) {
  MLIRContext *ctx = op->getContext();
  SmallVector<Attribute> regions(op->getNumRegions(), ArrayAttr::get(ctx, {}));
  if (auto old =
          dyn_cast_or_null<ArrayAttr>(op->getAttr(ArgSharding::getNameStr())))
    for (auto [i, a] : llvm::enumerate(old))
      regions[i] = a;
  regions[region] = toArray(ctx, shardings);
  op->setAttr(ArgSharding::getNameStr(), ArrayAttr::get(ctx, regions));
}

ShardingAttr mlir::stage::getOperandSharding(Operation *op, unsigned i) {
  return nth(op->getAttr(OperandSharding::getNameStr()), i);
}

void mlir::stage::setOperandShardings(Operation *op,
                                      ArrayRef<ShardingAttr> shardings) {
  op->setAttr(OperandSharding::getNameStr(),
              toArray(op->getContext(), shardings));
}

ShardingAttr mlir::stage::getNaturalSharding(Operation *op, unsigned i) {
  if (ShardingAttr s = nth(op->getAttr(NaturalSharding::getNameStr()), i))
    return s;
  return nth(op->getAttr(Sharding::getNameStr()), i);
}

void mlir::stage::setNaturalShardings(Operation *op,
                                      ArrayRef<ShardingAttr> natural,
                                      ArrayRef<ShardingAttr> kept) {
  if (natural == kept) {
    removeNaturalShardings(op);
    return;
  }
  op->setAttr(NaturalSharding::getNameStr(),
              toArray(op->getContext(), natural));
}

bool mlir::stage::hasNaturalShardings(Operation *op) {
  return op->hasAttr(NaturalSharding::getNameStr());
}

void mlir::stage::removeNaturalShardings(Operation *op) {
  op->removeAttr(NaturalSharding::getNameStr());
}

bool mlir::stage::hasShardingAnnotations(Operation *op) {
  return op->hasAttr(Sharding::getNameStr()) ||
         op->hasAttr(OperandSharding::getNameStr());
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
    for (StringRef name :
         {Sharding::getNameStr(), NaturalSharding::getNameStr(),
          OperandSharding::getNameStr(), ArgSharding::getNameStr()})
      op->removeAttr(name);
  });
}

ShardingAttr mlir::stage::getPlanSharding(Operation *op) {
  return op->getAttrOfType<ShardingAttr>(PlanSharding::getNameStr());
}

bool mlir::stage::hasPlanSharding(Operation *op) {
  return op->hasAttr(PlanSharding::getNameStr());
}

void mlir::stage::setPlanSharding(Operation *op, ShardingAttr sharding) {
  op->setAttr(PlanSharding::getNameStr(), sharding);
}

bool mlir::stage::isProgramOutput(Operation *op) {
  return op->hasAttr(Output::getNameStr());
}

void mlir::stage::markProgramOutput(Operation *op) {
  op->setAttr(Output::getNameStr(), UnitAttr::get(op->getContext()));
}

ArrayAttr mlir::stage::getVocabParallelAxes(Operation *op) {
  return op->getAttrOfType<ArrayAttr>(VocabParallel::getNameStr());
}

void mlir::stage::setVocabParallelAxes(Operation *op,
                                       ArrayRef<std::string> axes) {
  Builder b(op->getContext());
  SmallVector<StringRef> names(axes.begin(), axes.end());
  op->setAttr(VocabParallel::getNameStr(), b.getStrArrayAttr(names));
}

//===----------------------------------------------------------------------===//
// Recomputation
//===----------------------------------------------------------------------===//

static void mark(Operation *op, StringRef name) {
  op->setAttr(name, UnitAttr::get(op->getContext()));
}

bool mlir::stage::isRecomputable(Operation *op) {
  return op->hasAttr(Recomputable::getNameStr());
}

void mlir::stage::markRecomputable(Operation *op) {
  mark(op, Recomputable::getNameStr());
}

bool mlir::stage::keepsRecomputedResult(Operation *op) {
  return op->hasAttr(KeepsResult::getNameStr());
}

void mlir::stage::markKeepsRecomputedResult(Operation *op) {
  mark(op, KeepsResult::getNameStr());
}

void mlir::stage::clearRecomputeMarks(Operation *op) {
  op->removeAttr(Recomputable::getNameStr());
  op->removeAttr(KeepsResult::getNameStr());
}

bool mlir::stage::isRecomputation(Operation *op) {
  return op->hasAttr(Recompute::getNameStr());
}

void mlir::stage::markRecomputation(Operation *op) {
  mark(op, Recompute::getNameStr());
}

bool mlir::stage::isTokenFeedback(Operation *op) {
  return op->hasAttr(TokenFeedback::getNameStr());
}

void mlir::stage::markTokenFeedback(Operation *op) {
  mark(op, TokenFeedback::getNameStr());
}

bool mlir::stage::isAttentionCore(Operation *op) {
  return op->hasAttr(AttentionCore::getNameStr());
}

void mlir::stage::markAttentionCore(Operation *op) {
  mark(op, AttentionCore::getNameStr());
}

/// Each kind's name and flag, in the order they are written.
static const std::pair<StringRef, bool OverlapKinds::*> kOverlapKinds[] = {
    {"grad", &OverlapKinds::grad},
    {"tp", &OverlapKinds::tp},
    {"fsdp", &OverlapKinds::fsdp}};

/// The flag of kind `name`, if it is one.
static bool OverlapKinds::*overlapFlag(StringRef name) {
  for (const auto &[kind, flag] : kOverlapKinds)
    if (kind == name)
      return flag;
  return nullptr;
}

FailureOr<OverlapKinds> mlir::stage::parseOverlap(StringRef text,
                                                  std::string &error) {
  if (text == "all")
    return OverlapKinds::all();
  OverlapKinds k = OverlapKinds::none();
  if (text == "none")
    return k;
  SmallVector<StringRef> parts;
  text.split(parts, ',');
  for (StringRef part : parts) {
    bool OverlapKinds::*flag = overlapFlag(part.trim());
    if (!flag) {
      error = ("unknown overlap '" + part.trim() +
               "'; expected all, none or a comma-separated list of " +
               llvm::join(llvm::make_first_range(kOverlapKinds), ", "))
                  .str();
      return failure();
    }
    k.*flag = true;
  }
  return k;
}

StringRef mlir::stage::getRoutingSpec(Operation *op) {
  ModuleOp module = isa<ModuleOp>(op) ? cast<ModuleOp>(op)
                                      : op->getParentOfType<ModuleOp>();
  // A disaggregated group's module nests in the outer one, which holds it.
  while (module && !module->hasAttr(RoutingName::getNameStr()) &&
         module->getParentOfType<ModuleOp>())
    module = module->getParentOfType<ModuleOp>();
  if (auto text = module ? module->getAttrOfType<StringAttr>(
                               RoutingName::getNameStr())
                         : StringAttr())
    return text.getValue();
  return "";
}

void mlir::stage::setRoutingSpec(ModuleOp module, StringRef spec) {
  if (spec.empty() || spec == "uniform")
    module->removeAttr(RoutingName::getNameStr());
  else
    module->setAttr(RoutingName::getNameStr(),
                    StringAttr::get(module.getContext(), spec));
}

OverlapKinds mlir::stage::getOverlap(ModuleOp module) {
  auto list = module->getAttrOfType<ArrayAttr>(Overlap::getNameStr());
  if (!list)
    return OverlapKinds();
  OverlapKinds k = OverlapKinds::none();
  for (Attribute a : list)
    if (bool OverlapKinds::*flag = overlapFlag(cast<StringAttr>(a).getValue()))
      k.*flag = true;
  return k;
}

void mlir::stage::setOverlap(ModuleOp module, OverlapKinds k) {
  SmallVector<StringRef> names;
  for (const auto &[kind, flag] : kOverlapKinds)
    if (k.*flag)
      names.push_back(kind);
  Builder b(module.getContext());
  module->setAttr(Overlap::getNameStr(), b.getStrArrayAttr(names));
}

int64_t mlir::stage::getLayerPeriod(RepeatOp op) {
  auto n = op->getAttrOfType<IntegerAttr>(LayerPeriod::getNameStr());
  return n ? n.getInt() : 1;
}

void mlir::stage::setLayerPeriod(RepeatOp op, int64_t layers) {
  op->setAttr(LayerPeriod::getNameStr(),
              IntegerAttr::get(IntegerType::get(op.getContext(), 64), layers));
}

std::optional<int64_t> mlir::stage::getModelLayer(Operation *op) {
  if (auto n = op->getAttrOfType<IntegerAttr>(ModelLayer::getNameStr()))
    return n.getInt();
  return std::nullopt;
}

void mlir::stage::setModelLayer(Operation *op, int64_t layer) {
  op->setAttr(ModelLayer::getNameStr(),
              IntegerAttr::get(IntegerType::get(op->getContext(), 64), layer));
}

ArrayRef<int64_t> mlir::stage::getHoldingStages(ParamOp op) {
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(HeldBy::getNameStr()))
    return a.asArrayRef();
  return {};
}

void mlir::stage::setHoldingStages(ParamOp op, ArrayRef<int64_t> stages) {
  op->setAttr(HeldBy::getNameStr(),
              DenseI64ArrayAttr::get(op->getContext(), stages));
}

//===----------------------------------------------------------------------===//
// Frontends' names
//===----------------------------------------------------------------------===//

ArrayAttr mlir::stage::getDimNames(Operation *op) {
  return op->getAttrOfType<ArrayAttr>(Dims::getNameStr());
}

void mlir::stage::setDimNames(Operation *op, ArrayAttr names) {
  op->setAttr(Dims::getNameStr(), names);
}

void mlir::stage::removeDimNames(Operation *op) {
  op->removeAttr(Dims::getNameStr());
}

StringRef mlir::stage::getDimNamesAttrName() { return Dims::getNameStr(); }

ArrayAttr mlir::stage::getArgDimNames(FunctionOpInterface fn, unsigned arg) {
  return fn.getArgAttrOfType<ArrayAttr>(arg, Dims::getNameStr());
}

StringAttr mlir::stage::getArgWeightName(FunctionOpInterface fn, unsigned arg) {
  return fn.getArgAttrOfType<StringAttr>(arg, Param::getNameStr());
}

StringAttr mlir::stage::getArgWeightGroup(FunctionOpInterface fn,
                                          unsigned arg) {
  return fn.getArgAttrOfType<StringAttr>(arg, Group::getNameStr());
}

StringAttr mlir::stage::getArgInputName(FunctionOpInterface fn, unsigned arg) {
  return fn.getArgAttrOfType<StringAttr>(arg, Input::getNameStr());
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

/// Whether `attr` is an array of `#stage.sharding` (or, with `nested`, an
/// array of such arrays).
static bool isShardingList(Attribute attr, bool nested = false) {
  auto list = dyn_cast<ArrayAttr>(attr);
  return list && llvm::all_of(list, [&](Attribute a) {
           return nested ? isShardingList(a) : isa<ShardingAttr>(a);
         });
}

LogicalResult StageDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto expect = [&](bool ok, StringRef what) -> LogicalResult {
    if (ok)
      return success();
    return op->emitError("'") << name << "' must be " << what;
  };
  if (name == Bindings::getNameStr() || name == Model::getNameStr() ||
      name == ShardingRules::getNameStr()) {
    if (!isa<ModuleOp>(op))
      return op->emitError("'") << name << "' belongs on the module";
    return expect(isa<DictionaryAttr>(value), "a dictionary");
  }
  if (name == Sharding::getNameStr() || name == OperandSharding::getNameStr() ||
      name == NaturalSharding::getNameStr())
    return expect(isShardingList(value), "a list of #stage.sharding");
  if (name == ArgSharding::getNameStr())
    return expect(isShardingList(value, /*nested=*/true),
                  "a list (one per region) of lists of #stage.sharding");
  if (name == PlanSharding::getNameStr())
    return expect(isa<ShardingAttr>(value), "a #stage.sharding");
  if (name == Output::getNameStr() || name == Recomputable::getNameStr() ||
      name == KeepsResult::getNameStr() || name == Recompute::getNameStr() ||
      name == AttentionCore::getNameStr())
    return expect(isa<UnitAttr>(value), "a unit attribute");
  if (name == LayerPeriod::getNameStr()) {
    auto n = dyn_cast<IntegerAttr>(value);
    return expect(isa<RepeatOp>(op) && n && n.getInt() > 0,
                  "a positive integer on a stage.repeat");
  }
  if (name == ModelLayer::getNameStr()) {
    auto n = dyn_cast<IntegerAttr>(value);
    return expect(n && n.getInt() >= 0, "a non-negative integer");
  }
  if (name == HeldBy::getNameStr()) {
    auto list = dyn_cast<DenseI64ArrayAttr>(value);
    bool ok = isa<ParamOp>(op) && list && list.size() >= 2;
    for (size_t i = 0; ok && i < list.size(); ++i)
      ok = list[i] >= 0 && (i == 0 || list[i] > list[i - 1]);
    return expect(ok, "at least two increasing stage indices on a "
                      "stage.param");
  }
  if (name == TokenFeedback::getNameStr()) {
    if (!isa<SendOp, RecvOp>(op))
      return op->emitError("'") << name << "' belongs on a stage.send or "
                                           "stage.recv";
    return expect(isa<UnitAttr>(value), "a unit attribute");
  }
  if (name == Overlap::getNameStr()) {
    auto list = dyn_cast<ArrayAttr>(value);
    return expect(isa<ModuleOp>(op) && list &&
                      llvm::all_of(list,
                                   [](Attribute a) {
                                     auto s = dyn_cast<StringAttr>(a);
                                     return s && overlapFlag(s.getValue());
                                   }),
                  "a list of grad, tp and fsdp on the module");
  }
  if (name == RoutingName::getNameStr()) {
    auto text = dyn_cast<StringAttr>(value);
    std::string error;
    if (!isa<ModuleOp>(op))
      return op->emitError("'") << name << "' belongs on the module";
    if (!text || !::stage::Routing::parse(text.getValue(), error))
      return op->emitError("'")
             << name << "' must be a routing: "
             << (text ? error : std::string("a string"));
    return success();
  }
  if (name == VocabParallel::getNameStr()) {
    auto list = dyn_cast<ArrayAttr>(value);
    return expect(list && llvm::all_of(list, llvm::IsaPred<StringAttr>),
                  "a list of grid axis names");
  }
  // The names' contents are checked where they are read (stage-symbolize).
  if (name == Dims::getNameStr())
    return expect(isa<ArrayAttr>(value), "a list of dimension names");
  return op->emitError("unknown attribute '")
         << name << "' of the stage dialect";
}

LogicalResult StageDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned region,
                                                     unsigned arg,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == Dims::getNameStr()) {
    if (isa<ArrayAttr>(value))
      return success();
    return op->emitError("'") << name << "' of argument " << arg
                              << " must be a list of dimension names";
  }
  if (name == Param::getNameStr() || name == Group::getNameStr() ||
      name == Input::getNameStr()) {
    if (isa<StringAttr>(value))
      return success();
    return op->emitError("'")
           << name << "' of argument " << arg << " must be a string";
  }
  return op->emitError("unknown argument attribute '")
         << name << "' of the stage dialect";
}
