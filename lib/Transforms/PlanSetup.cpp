//===- PlanSetup.cpp - The grid and degrees of a plan ---------------------===//

#include "PlanSetup.h"

#include "Stage/Analysis/Bindings.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Support/JsonLimits.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::stage;

static const char *const kKnownAxes[] = {"pp", "dp", "cp", "ep", "tp"};

FailureOr<int64_t> mlir::stage::getRequestedDegree(ModuleOp module,
                                                   StringRef axis,
                                                   int64_t requested) {
  if (requested < 0)
    return emitOptionError(module)
           << axis << "=" << requested << " is not a parallel degree";
  if (requested > 0)
    return requested;
  FailureOr<sym::Bindings> bindings = getModuleBindings(module);
  if (failed(bindings))
    return failure();
  auto it = bindings->find(axis.str());
  return it == bindings->end() ? int64_t(1) : it->second;
}

FailureOr<ParallelPlan> mlir::stage::setUpPlan(ModuleOp module,
                                               const PlanRequest &req) {
  SmallVector<StringRef> parts;
  StringRef(req.order).split(parts, ',', -1, /*KeepEmpty=*/false);
  SmallVector<std::string> listed;
  for (StringRef p : parts) {
    std::string a = p.trim().str();
    if (!llvm::is_contained(kKnownAxes, a))
      return emitOptionError(module) << "order: unknown axis '" << a
                                     << "'; the axes are pp, dp, cp, ep, tp";
    if (llvm::is_contained(listed, a))
      return emitOptionError(module)
             << "order: axis '" << a << "' appears twice";
    listed.push_back(a);
  }
  // The listed axes fill their own places of the default order, in the
  // order given; the others stay where they are.
  SmallVector<std::string> axes(std::begin(kKnownAxes), std::end(kKnownAxes));
  auto next = listed.begin();
  for (std::string &a : axes)
    if (llvm::is_contained(listed, a))
      a = *next++;

  if (GridOp grid = getGrid(module)) {
    if (grid.getAxisNames() != axes)
      return emitOptionError(module)
             << "the module's grid has another axis order than order="
             << req.order;
  } else {
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    GridOp::create(b, module.getLoc(), "grid", b.getStrArrayAttr(
        SmallVector<StringRef>(axes.begin(), axes.end())));
  }

  FailureOr<sym::Bindings> bindings = getModuleBindings(module);
  if (failed(bindings))
    return failure();
  ParallelPlan plan;
  plan.axes = axes;
  for (const auto &[axis, requested] : req.degrees) {
    if (requested < 0)
      return emitOptionError(module)
             << axis << "=" << requested << " is not a parallel degree";
    int64_t d = requested;
    if (d == 0) {
      auto it = bindings->find(axis);
      d = it == bindings->end() ? 1 : it->second;
    }
    (*bindings)[axis] = d;
  }
  for (const std::string &a : axes) {
    auto it = bindings->find(a);
    int64_t d = it == bindings->end() ? 1 : it->second;
    (*bindings)[a] = d;
    plan.degree[a] = d;
  }
  setModuleBindings(module, *bindings);
  plan.bindings = *bindings;
  return plan;
}

static LogicalResult applyRules(ModuleOp module, const llvm::json::Object &obj,
                                StringRef origin, ParallelPlan &plan) {
  if (const llvm::json::Object *roles = obj.getObject("roles"))
    for (const auto &[key, value] : *roles) {
      std::optional<Role> role = parseRole(key);
      if (!role)
        return emitOptionError(module)
               << origin << ": unknown role '" << key.str()
               << "'; roles are batch, tokens, seq, heads, kv_heads, ffn, "
                  "vocab, experts, layer, none";
      const llvm::json::Array *list = value.getAsArray();
      if (!list)
        return emitOptionError(module) << origin << ": role '" << key.str()
                                       << "' must map to a list of axes";
      SmallVector<std::string> axes;
      for (const llvm::json::Value &a : *list) {
        std::optional<StringRef> s = a.getAsString();
        if (!s || !llvm::is_contained(kKnownAxes, *s))
          return emitOptionError(module)
                 << origin << ": role '" << key.str()
                 << "' names an axis that is not one of pp, dp, cp, ep, tp";
        axes.push_back(s->str());
      }
      plan.overrides[*role] = axes;
    }
  if (const llvm::json::Object *symbols = obj.getObject("symbols"))
    for (const auto &[key, value] : *symbols) {
      std::optional<StringRef> s = value.getAsString();
      std::optional<Role> role = s ? parseRole(*s) : std::nullopt;
      if (!role)
        return emitOptionError(module) << origin << ": symbol '" << key.str()
                                       << "' must map to a role name";
      plan.symbolRoles[key.str()] = *role;
    }
  return success();
}

LogicalResult mlir::stage::loadRules(ModuleOp module, StringRef path,
                                     ParallelPlan &plan) {
  if (auto attr = getShardingRules(module)) {
    // The attribute mirrors the JSON form: {roles = {seq = ["cp"]}}.
    llvm::json::Object obj;
    for (StringRef section : {"roles", "symbols"}) {
      auto dict = attr.getAs<DictionaryAttr>(section);
      if (!dict)
        continue;
      llvm::json::Object inner;
      for (NamedAttribute na : dict) {
        if (auto s = dyn_cast<StringAttr>(na.getValue())) {
          inner[na.getName().getValue()] = s.getValue().str();
        } else if (auto arr = dyn_cast<ArrayAttr>(na.getValue())) {
          llvm::json::Array list;
          for (Attribute a : arr)
            if (auto s = dyn_cast<StringAttr>(a))
              list.push_back(s.getValue().str());
          inner[na.getName().getValue()] = std::move(list);
        }
      }
      obj[section] = std::move(inner);
    }
    if (failed(applyRules(module, obj, getShardingRulesAttrName(), plan)))
      return failure();
  }
  if (path.empty())
    return success();
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return emitOptionError(module)
           << "rules=" << path << ": cannot read the file";
  llvm::Expected<llvm::json::Value> parsed =
      sym::parseJsonWithinLimits((*buf)->getBuffer());
  if (!parsed)
    return emitOptionError(module)
           << "rules=" << path << ": " << llvm::toString(parsed.takeError());
  const llvm::json::Object *obj = parsed->getAsObject();
  if (!obj)
    return emitOptionError(module)
           << "rules=" << path << ": expected a JSON object";
  return applyRules(module, *obj, ("rules=" + path).str(), plan);
}
