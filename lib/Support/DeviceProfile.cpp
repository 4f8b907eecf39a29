//===- DeviceProfile.cpp - An accelerator and its node, as data -----------===//

#include "Stage/Support/DeviceProfile.h"

#include "Stage/Support/JsonLimits.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>

using namespace stage;

std::string DeviceProfile::timingKey() const {
  double numbers[] = {matmulFlops,      fp8Flops,        vectorFlops,
                      memoryBytes,      double(multiprocessors),
                      double(matmulTileRows), double(matmulTileColumns),
                      matmulEfficiency, fp8MatmulEfficiency,
                      memoryEfficiency, kernelOverhead,  double(gpusPerNode),
                      linkBytes,        linkEfficiency,  latency,
                      networkBytes,     networkEfficiency, networkLatency,
                      double(ringAllToAll)};
  return std::string(reinterpret_cast<const char *>(numbers), sizeof(numbers));
}

std::string DeviceProfile::displayName() const {
  if (overridden.empty())
    return name;
  return name + " with " + llvm::join(overridden, ", ") + " overridden";
}

namespace {
/// A number of the profile: its JSON key, where it goes, whether a profile
/// must give it, and its range.
struct Field {
  const char *key;
  double DeviceProfile::*real = nullptr;
  int64_t DeviceProfile::*integer = nullptr;
  bool required = false;
  double least = 0, most = 1e30;
  bool positive = true; // `least` excluded
};

const Field kFields[] = {
    {"matrix_flops", &DeviceProfile::matmulFlops, nullptr, true},
    {"fp8_flops", &DeviceProfile::fp8Flops, nullptr, false, 0, 1e30, false},
    {"vector_flops", &DeviceProfile::vectorFlops},
    {"memory_bandwidth", &DeviceProfile::memoryBytes, nullptr, true},
    {"memory_capacity", &DeviceProfile::memoryCapacity, nullptr, true},
    {"multiprocessors", nullptr, &DeviceProfile::multiprocessors, false, 0,
     1e6, false},
    {"matmul_tile_rows", nullptr, &DeviceProfile::matmulTileRows, false, 0,
     1e6, false},
    {"matmul_tile_columns", nullptr, &DeviceProfile::matmulTileColumns, false,
     0, 1e6, false},
    {"matmul_efficiency", &DeviceProfile::matmulEfficiency, nullptr, false, 0,
     1},
    {"fp8_matmul_efficiency", &DeviceProfile::fp8MatmulEfficiency, nullptr,
     false, 0, 1},
    {"memory_efficiency", &DeviceProfile::memoryEfficiency, nullptr, false, 0,
     1},
    {"kernel_overhead", &DeviceProfile::kernelOverhead, nullptr, false, 0, 1,
     false},
    {"gpus_per_node", nullptr, &DeviceProfile::gpusPerNode, false, 0, 1e9},
    {"link_bandwidth", &DeviceProfile::linkBytes, nullptr, true},
    {"link_efficiency", &DeviceProfile::linkEfficiency, nullptr, false, 0, 1},
    {"link_latency", &DeviceProfile::latency, nullptr, false, 0, 1, false},
    {"network_bandwidth", &DeviceProfile::networkBytes},
    {"network_efficiency", &DeviceProfile::networkEfficiency, nullptr, false,
     0, 1},
    {"network_latency", &DeviceProfile::networkLatency, nullptr, false, 0, 1,
     false},
};

std::string number(double v) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%g", v);
  return s;
}

const Field *findField(llvm::StringRef key) {
  for (const Field &f : kFields)
    if (key == f.key)
      return &f;
  return nullptr;
}

/// Why `value` is out of `f`'s range, or "".
std::string rangeError(const Field &f, double value) {
  if (std::isfinite(value) && value <= f.most &&
      (f.positive ? value > f.least : value >= f.least))
    return "";
  return "\"" + std::string(f.key) + "\" must be a number " +
         (f.positive ? "above " : "at least ") + number(f.least) +
         (f.most < 1e30 ? " and at most " + number(f.most) : "");
}
} // namespace

std::vector<std::string> DeviceProfile::numberKeys() {
  std::vector<std::string> keys;
  for (const Field &f : kFields)
    keys.push_back(f.key);
  return keys;
}

std::optional<double> DeviceProfile::get(llvm::StringRef key) const {
  const Field *f = findField(key);
  if (!f)
    return std::nullopt;
  return f->real ? this->*(f->real) : double(this->*(f->integer));
}

bool DeviceProfile::set(llvm::StringRef key, double value, std::string &error) {
  const Field *f = findField(key);
  if (!f) {
    error = "unknown number \"" + key.str() + "\"; a profile's numbers are " +
            llvm::join(numberKeys(), ", ");
    return false;
  }
  if (std::string why = rangeError(*f, value); !why.empty()) {
    error = why;
    return false;
  }
  if (f->real)
    this->*(f->real) = value;
  else
    this->*(f->integer) = int64_t(std::llround(value));
  overridden.push_back(key.str());
  return true;
}

std::optional<DeviceProfile> DeviceProfile::parse(llvm::StringRef text,
                                                  llvm::StringRef fallbackName,
                                                  std::string &error) {
  llvm::Expected<llvm::json::Value> json = sym::parseJsonWithinLimits(text);
  if (!json) {
    error = "malformed JSON: " + llvm::toString(json.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *o = json->getAsObject();
  if (!o) {
    error = "a device profile is one JSON object";
    return std::nullopt;
  }
  DeviceProfile p;
  p.name = o->getString("name").value_or(fallbackName).str();
  p.description = o->getString("description").value_or("").str();
  if (p.name.empty()) {
    error = "\"name\" is empty";
    return std::nullopt;
  }
  // Keys in a fixed order: the first error is the same whatever the order
  // of the file.
  std::vector<std::string> keys;
  for (const auto &kv : *o)
    keys.push_back(kv.first.str());
  std::sort(keys.begin(), keys.end());
  for (const std::string &key : keys) {
    if (key == "name" || key == "description" || key == "all_to_all")
      continue;
    const Field *f = findField(key);
    if (!f) {
      error = "unknown key \"" + key + "\"; a profile has name, description, " +
              llvm::join(numberKeys(), ", ") + " and all_to_all";
      return std::nullopt;
    }
    const llvm::json::Value &v = *o->get(key);
    std::optional<double> value = v.getAsNumber();
    if (const llvm::json::Object *entry = v.getAsObject()) {
      value = entry->getNumber("value");
      if (std::optional<llvm::StringRef> source = entry->getString("source"))
        p.sources[key] = source->str();
      for (const auto &kv : *entry)
        if (kv.first != "value" && kv.first != "source") {
          error = "\"" + key + "\" has the key \"" + kv.first.str() +
                  "\"; an entry is a number or {\"value\": N, \"source\": "
                  "\"...\"}";
          return std::nullopt;
        }
    }
    if (!value) {
      error = "\"" + key + "\" must be a number";
      return std::nullopt;
    }
    if (std::string why = rangeError(*f, *value); !why.empty()) {
      error = why;
      return std::nullopt;
    }
    if (f->real)
      p.*(f->real) = *value;
    else
      p.*(f->integer) = int64_t(std::llround(*value));
  }
  for (const Field &f : kFields)
    if (f.required && !o->get(f.key)) {
      error = "\"" + std::string(f.key) + "\" is missing";
      return std::nullopt;
    }
  if (p.vectorFlops == 0)
    p.vectorFlops = p.matmulFlops;
  if (const llvm::json::Value *a2a = o->get("all_to_all")) {
    std::optional<llvm::StringRef> kind = a2a->getAsString();
    if (!kind || (*kind != "ring" && *kind != "direct")) {
      error = "\"all_to_all\" must be \"ring\" or \"direct\"";
      return std::nullopt;
    }
    p.ringAllToAll = *kind == "ring";
  }
  return p;
}

namespace {
#include "Stage/Support/ShippedProfiles.inc"
} // namespace

const std::map<std::string, std::string> &stage::getShippedProfileTexts() {
  static const std::map<std::string, std::string> texts = [] {
    std::map<std::string, std::string> m;
    for (const auto &[name, text] : kShippedProfiles)
      m[name] = text;
    return m;
  }();
  return texts;
}

std::optional<DeviceProfile> stage::getShippedProfile(llvm::StringRef name) {
  for (const auto &[shipped, text] : getShippedProfileTexts())
    if (name.equals_insensitive(shipped)) {
      std::string error;
      return DeviceProfile::parse(text, shipped, error);
    }
  return std::nullopt;
}

std::string stage::getShippedProfileNames() {
  std::string s;
  for (const auto &entry : getShippedProfileTexts())
    s += (s.empty() ? "" : ", ") + entry.first;
  return s;
}
