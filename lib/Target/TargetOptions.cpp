//===- TargetOptions.cpp - Options shared by the translations -------------===//

#include "Stage/Target/TargetOptions.h"

#include "Stage/Analysis/Bindings.h"

#include "llvm/Support/CommandLine.h"

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

FailureOr<sym::Bindings> mlir::stage::getEffectiveBindings(ModuleOp module) {
  sym::Bindings overrides;
  for (const std::string &text : bindingOption().bind) {
    std::string err = parseBindingList(text, overrides);
    if (!err.empty())
      return module.emitError("--bind: ") << err;
  }
  return getModuleBindings(module, overrides);
}

namespace {
struct DeviceOptions {
  llvm::cl::opt<std::string> name{
      "device",
      llvm::cl::desc("Roofline device preset (h100, h200, b200, mi300x)")};
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
      llvm::cl::desc("Override: network bytes/s per direction"),
      llvm::cl::value_desc("B/s")};
  llvm::cl::opt<std::string> memory{
      "device-memory", llvm::cl::desc("Override: device memory, as in 80GiB"),
      llvm::cl::value_desc("size")};
};
} // namespace

static DeviceOptions &deviceOptions() {
  static DeviceOptions options;
  return options;
}

void mlir::stage::registerDeviceOptions() { (void)deviceOptions(); }

std::optional<double> mlir::stage::parseByteSize(StringRef text) {
  static const std::pair<const char *, double> units[] = {
      {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024},
      {"TiB", 1024.0 * 1024 * 1024 * 1024}, {"KB", 1e3}, {"MB", 1e6},
      {"GB", 1e9}, {"TB", 1e12}, {"B", 1.0}};
  StringRef number = text.trim();
  double scale = 1.0;
  for (auto [suffix, factor] : units)
    if (number.consume_back(suffix)) {
      scale = factor;
      break;
    }
  double v;
  if (number.trim().getAsDouble(v) || v <= 0)
    return std::nullopt;
  return v * scale;
}

FailureOr<std::optional<DeviceModel>>
mlir::stage::getDeviceModel(ModuleOp module, StringRef fallback) {
  const DeviceOptions &o = deviceOptions();
  std::string name = o.name.empty() ? fallback.str() : std::string(o.name);
  std::optional<DeviceModel> d;
  if (!name.empty()) {
    d = getDevicePreset(name);
    if (!d)
      return module.emitError("--device=")
             << name << ": unknown device; presets: " << getDevicePresetNames();
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
  };
  for (const Override &ov : overrides) {
    if (ov.opt.empty())
      continue;
    double v;
    std::optional<double> parsed =
        ov.size ? parseByteSize(ov.opt)
                : (StringRef(ov.opt).getAsDouble(v) || v <= 0
                       ? std::nullopt
                       : std::optional<double>(v));
    if (!parsed)
      return module.emitError("--")
             << ov.opt.ArgStr << "=" << ov.opt << ": expected a positive "
             << (ov.size ? "size, as in 80GiB" : "number, as in 989e12");
    if (!d)
      return module.emitError("--")
             << ov.opt.ArgStr << " overrides a device: name one with --device";
    (*d).*ov.field = *parsed;
  }
  return d;
}

void mlir::stage::reportLocationsOnly(MLIRContext *ctx) {
  ctx->printOpOnDiagnostic(false);
}
