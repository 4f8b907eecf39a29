//===- TargetOptions.cpp - Options shared by the translations -------------===//

#include "Stage/Target/TargetOptions.h"

#include "Stage/Analysis/Bindings.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Support/ByteSize.h"
#include "Stage/Support/JsonLimits.h"
#include "Stage/Support/SafeFiles.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "llvm/ADT/StringExtras.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace mlir;
using namespace mlir::stage;

namespace {
struct BindingOption {
  llvm::cl::list<std::string> bind{
      "bind",
      llvm::cl::desc("Override symbol bindings, as in --bind=B=16,tp=8 "
                     "(repeatable; later values win)"),
      llvm::cl::value_desc("NAME=VALUE,...")};
};
} // namespace

static BindingOption &bindingOption() {
  static BindingOption option;
  return option;
}

void mlir::stage::registerBindingOption() { (void)bindingOption(); }

/// The symbols that the shapes and counts of `module` use.
static std::set<std::string> getUsedSymbols(ModuleOp module) {
  std::set<std::string> used;
  AttrTypeWalker walker;
  walker.addWalk([&](SymTensorType t) {
    for (const sym::Expr &d : t.getDims())
      for (const std::string &s : d.symbols())
        used.insert(s);
  });
  walker.addWalk([&](ExprAttr a) {
    for (const std::string &s : a.getValue().symbols())
      used.insert(s);
  });
  module->walk([&](Operation *op) {
    walker.walk(op->getAttrDictionary());
    for (Type t : op->getResultTypes())
      walker.walk(t);
    for (Region &r : op->getRegions())
      for (Block &b : r)
        for (BlockArgument a : b.getArguments())
          walker.walk(a.getType());
  });
  return used;
}

/// A `--bind` must change what the step computes: it names a symbol that
/// the step's shapes or counts use, and it leaves the plan's degrees as
/// stage-train fixed them (the collectives, the stages and the replication
/// of kv heads were chosen for them).
static LogicalResult checkOverrides(ModuleOp module,
                                    const sym::Bindings &overrides) {
  FailureOr<sym::Bindings> compiled = getModuleBindings(module);
  if (failed(compiled))
    return failure();
  SmallVector<std::string> axes;
  for (GridOp grid : module.getOps<GridOp>())
    axes = grid.getAxisNames();
  std::set<std::string> used = getUsedSymbols(module);
  // A disaggregated run's --bind applies to both of its rank groups: a
  // symbol either uses is bound in both.
  if (auto parent = module->getParentOfType<ModuleOp>())
    if (std::optional<ServingGroups> groups = getServingGroups(parent))
      for (auto [name, group] : groups->named())
        used.merge(getUsedSymbols(group));
  for (const auto &[name, value] : overrides) {
    auto was = compiled->find(name);
    if (llvm::is_contained(axes, name)) {
      if (was != compiled->end() && was->second == value)
        continue;
      return emitOptionError(module)
             << "--bind: " << name << "=" << value
             << " changes a parallel degree of the step, which was built for "
             << name << "=" << (was == compiled->end() ? 1 : was->second)
             << ": build the step again with --stage-train=\"" << name << "="
             << value << " ...\"";
    }
    if (used.count(name))
      continue;
    InFlightDiagnostic diag = emitOptionError(module)
                              << "--bind: the step does not use the symbol '"
                              << name << "'";
    if (was == compiled->end()) {
      diag << "; its shapes use " << llvm::join(used, ", ");
    } else if (name == "L" || name == "Ld") {
      diag << ": its layers are split into pipeline stages of fixed sizes; "
              "import the model with the layer count you want";
    } else {
      diag << ", so binding it changes nothing";
    }
    return diag;
  }
  return success();
}

FailureOr<sym::Bindings> mlir::stage::getEffectiveBindings(ModuleOp module) {
  sym::Bindings overrides;
  for (const std::string &text : bindingOption().bind) {
    std::string err = parseBindingList(text, overrides);
    if (!err.empty())
      return emitOptionError(module) << "--bind: " << err;
  }
  if (!overrides.empty() && failed(checkOverrides(module, overrides)))
    return failure();
  return getModuleBindings(module, overrides);
}

namespace {
/// "Device profile: a100-40gb, ...", built once for the option's help.
const std::string &deviceHelp() {
  static const std::string help =
      "Device profile shipped with stage: " + getDevicePresetNames();
  return help;
}

struct DeviceOptions {
  llvm::cl::opt<std::string> name{"device", llvm::cl::desc(deviceHelp())};
  llvm::cl::opt<std::string> profile{
      "device-profile",
      llvm::cl::desc("A device profile of your own (JSON, as profiles/*.json)"),
      llvm::cl::value_desc("file")};
  llvm::cl::opt<std::string> peakFlops{
      "peak-flops", llvm::cl::desc("Override: dense matrix FLOP/s"),
      llvm::cl::value_desc("FLOP/s")};
  llvm::cl::opt<std::string> vectorFlops{
      "vector-flops", llvm::cl::desc("Override: elementwise FLOP/s"),
      llvm::cl::value_desc("FLOP/s")};
  llvm::cl::opt<std::string> memoryBandwidth{
      "memory-bandwidth", llvm::cl::desc("Override: HBM bytes/s"),
      llvm::cl::value_desc("B/s")};
  llvm::cl::opt<std::string> linkBandwidth{
      "link-bandwidth",
      llvm::cl::desc("Override: scale-up (NVLink) bytes/s per direction "
                     "inside a node"),
      llvm::cl::value_desc("B/s")};
  llvm::cl::opt<std::string> memory{
      "device-memory", llvm::cl::desc("Override: device memory, as in 80GiB"),
      llvm::cl::value_desc("size")};
  llvm::cl::opt<std::string> gpusPerNode{
      "gpus-per-node",
      llvm::cl::desc("Override: devices per node (on the scale-up links)")};
  llvm::cl::opt<std::string> networkBandwidth{
      "network-bandwidth",
      llvm::cl::desc("Override: bytes/s per device and direction across "
                     "nodes"),
      llvm::cl::value_desc("B/s")};
  llvm::cl::opt<std::string> latency{
      "link-latency",
      llvm::cl::desc("Override: seconds per message (a ring step) on the "
                     "scale-up links"),
      llvm::cl::value_desc("s")};
  llvm::cl::opt<std::string> networkLatency{
      "network-latency",
      llvm::cl::desc("Override: seconds per message (a ring step) across "
                     "nodes"),
      llvm::cl::value_desc("s")};
  llvm::cl::opt<std::string> network{
      "network",
      llvm::cl::desc("Override: a JSON file of gpus_per_node, "
                     "link_bandwidth, network_bandwidth, latency and "
                     "network_latency"),
      llvm::cl::value_desc("file")};
};
} // namespace

static DeviceOptions &deviceOptions() {
  static DeviceOptions options;
  return options;
}

void mlir::stage::registerDeviceOptions() { (void)deviceOptions(); }

std::optional<double> mlir::stage::parseByteSize(StringRef text) {
  return ::stage::parseByteSize(text);
}

FailureOr<std::optional<DeviceModel>>
mlir::stage::getDeviceModel(ModuleOp module, StringRef fallback) {
  const DeviceOptions &o = deviceOptions();
  std::string name = o.name.empty() ? fallback.str() : std::string(o.name);
  std::optional<DeviceModel> d;
  if (!o.profile.empty()) {
    if (!o.name.empty())
      return emitOptionError(module)
             << "--device and --device-profile both name a device: give one";
    std::string error;
    std::unique_ptr<llvm::MemoryBuffer> text = ::stage::files::readRegularFile(
        o.profile, uint64_t(256) << 20, error);
    if (!text)
      return emitOptionError(module) << "--device-profile: " << error;
    d = DeviceModel::parse(text->getBuffer(),
                           llvm::sys::path::stem(o.profile), error);
    if (!d)
      return emitOptionError(module) << o.profile << ": " << error;
  } else if (!name.empty()) {
    d = getDevicePreset(name);
    if (!d)
      return emitOptionError(module)
             << "--device=" << name
             << ": unknown device; profiles: " << getDevicePresetNames()
             << " (or --device-profile=FILE)";
  }
  struct Override {
    const llvm::cl::opt<std::string> &opt;
    double DeviceModel::*field;
    bool size;
  } overrides[] = {
      {o.peakFlops, &DeviceModel::matmulFlops, false},
      {o.vectorFlops, &DeviceModel::vectorFlops, false},
      {o.memoryBandwidth, &DeviceModel::memoryBytes, false},
      {o.linkBandwidth, &DeviceModel::linkBytes, false},
      {o.memory, &DeviceModel::memoryCapacity, true},
      {o.networkBandwidth, &DeviceModel::networkBytes, false},
      {o.latency, &DeviceModel::latency, false},
      {o.networkLatency, &DeviceModel::networkLatency, false},
  };
  for (const Override &ov : overrides) {
    if (ov.opt.empty())
      continue;
    double v;
    // A latency may be 0 (bandwidth alone); the rest must be positive.
    bool zeroOk = ov.field == &DeviceModel::latency ||
                  ov.field == &DeviceModel::networkLatency;
    std::optional<double> parsed =
        ov.size
            ? parseByteSize(ov.opt)
            : (StringRef(ov.opt).getAsDouble(v) || v < 0 || (v == 0 && !zeroOk)
                   ? std::nullopt
                   : std::optional<double>(v));
    if (!parsed)
      return emitOptionError(module)
             << "--" << ov.opt.ArgStr << "=" << ov.opt
             << ": expected a positive "
             << (ov.size ? "size, as in 80GiB" : "number, as in 989e12");
    if (!d)
      return emitOptionError(module)
             << "--" << ov.opt.ArgStr
             << " overrides a device: name one with --device";
    (*d).*ov.field = *parsed;
    d->overridden.push_back(ov.opt.ArgStr.str());
  }
  if (!o.gpusPerNode.empty()) {
    int64_t n;
    if (StringRef(o.gpusPerNode).getAsInteger(10, n) || n < 1)
      return emitOptionError(module) << "--gpus-per-node=" << o.gpusPerNode
                                     << ": expected a positive integer";
    if (!d)
      return emitOptionError(module)
             << "--gpus-per-node overrides a device: name one with --device";
    d->gpusPerNode = n;
    d->overridden.push_back("gpus-per-node");
  }
  if (!o.network.empty()) {
    if (!d)
      return emitOptionError(module)
             << "--network overrides a device: name one with --device";
    std::string error = applyNetworkFile(o.network, *d);
    if (!error.empty())
      return emitOptionError(module) << error;
    d->overridden.push_back("network");
  }
  return d;
}

std::string mlir::stage::applyNetworkFile(StringRef path, DeviceModel &d) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return "--network=" + path.str() + ": " + buffer.getError().message();
  llvm::Expected<llvm::json::Value> json =
      sym::parseJsonWithinLimits((*buffer)->getBuffer());
  if (!json)
    return "--network=" + path.str() + ": " + llvm::toString(json.takeError());
  const llvm::json::Object *o = json->getAsObject();
  if (!o)
    return "--network=" + path.str() + ": expected an object";
  static const std::pair<const char *, double DeviceModel::*> fields[] = {
      {"link_bandwidth", &DeviceModel::linkBytes},
      {"network_bandwidth", &DeviceModel::networkBytes},
      {"latency", &DeviceModel::latency},
      {"network_latency", &DeviceModel::networkLatency}};
  // `latency` alone is every message's (both levels); `network_latency`
  // then sets the scale-out level apart.
  if (o->get("latency") && !o->get("network_latency"))
    if (std::optional<double> v = o->getNumber("latency"); v && *v >= 0)
      d.networkLatency = *v;
  for (const auto &[key, value] : *o) {
    if (key == "all_to_all") {
      std::optional<StringRef> kind = value.getAsString();
      if (!kind || (*kind != "ring" && *kind != "direct"))
        return "--network=" + path.str() +
               ": 'all_to_all' must be \"ring\" or \"direct\"";
      d.ringAllToAll = *kind == "ring";
      continue;
    }
    std::optional<double> v = value.getAsNumber();
    bool latency = key == "latency" || key == "network_latency";
    if (!v || *v < 0 || (!latency && *v == 0))
      return "--network=" + path.str() + ": '" + key.str() +
             "' must be a positive number";
    if (key == "gpus_per_node") {
      if (*v < 1 || *v != double(int64_t(*v)))
        return "--network=" + path.str() +
               ": 'gpus_per_node' must be a positive integer";
      d.gpusPerNode = int64_t(*v);
      continue;
    }
    auto field =
        llvm::find_if(fields, [&](const auto &f) { return key == f.first; });
    if (field == std::end(fields))
      return "--network=" + path.str() + ": unknown key '" + key.str() +
             "' (expected gpus_per_node, link_bandwidth, network_bandwidth, "
             "latency, network_latency, all_to_all)";
    d.*(field->second) = *v;
  }
  return "";
}

void mlir::stage::reportLocationsOnly(MLIRContext *ctx) {
  ctx->printOpOnDiagnostic(false);
}
