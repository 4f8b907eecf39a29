//===- ConfigReader.cpp - Typed access to a config.json object ------------===//

#include "ConfigReader.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::stage;

const llvm::json::Value *ConfigReader::get(StringRef key) {
  seen.insert(key);
  return obj.get(key);
}

bool ConfigReader::has(StringRef key) {
  const llvm::json::Value *v = get(key);
  return v && v->kind() != llvm::json::Value::Null;
}

bool ConfigReader::isString(StringRef key) {
  const llvm::json::Value *v = get(key);
  return v && v->getAsString();
}

void ConfigReader::understood(std::initializer_list<StringRef> keys) {
  for (StringRef k : keys)
    seen.insert(k);
}

int64_t ConfigReader::integer(StringRef key) {
  if (*failed)
    return 0;
  const llvm::json::Value *v = get(key);
  if (!v) {
    error() << "missing field '" << field(key) << "'";
    return 0;
  }
  return checkedInteger(key, *v, 1);
}

int64_t ConfigReader::layerCount(StringRef key) {
  int64_t layers = integer(key);
  // The importer lists each layer's kind to find the model's repeated
  // layers: a count far beyond any model's would take its time and memory.
  if (!*failed && layers > maxLayers) {
    error() << "the config has " << layers
            << " layers, more than the importer's limit of " << maxLayers
            << " (--max-layers; it lists each layer's kind); the layer count "
               "stays symbolic (L) after import: import fewer and bind L with "
               "--bind=L=N";
    return 0;
  }
  return layers;
}

std::optional<int64_t> ConfigReader::optionalInteger(StringRef key) {
  if (*failed || !has(key))
    return std::nullopt;
  return checkedInteger(key, *get(key), 1);
}

int64_t ConfigReader::countOr(StringRef key, int64_t def) {
  if (*failed || !has(key))
    return def;
  return checkedInteger(key, *get(key), 0);
}

std::vector<int64_t> ConfigReader::integerList(StringRef key) {
  std::vector<int64_t> out;
  if (*failed || !has(key))
    return out;
  const llvm::json::Array *a = get(key)->getAsArray();
  if (!a) {
    error() << "field '" << field(key) << "' must be a list of integers, got "
            << describe(*get(key));
    return out;
  }
  for (const llvm::json::Value &v : *a) {
    out.push_back(checkedInteger(key, v, 0));
    if (*failed)
      break;
  }
  return out;
}

std::vector<std::string> ConfigReader::stringList(StringRef key) {
  std::vector<std::string> out;
  if (*failed || !has(key))
    return out;
  const llvm::json::Array *a = get(key)->getAsArray();
  for (size_t i = 0; a && i < a->size(); ++i)
    if (std::optional<StringRef> s = (*a)[i].getAsString())
      out.push_back(s->str());
  if (!a || out.size() != a->size()) {
    error() << "field '" << field(key) << "' must be a list of strings, got "
            << describe(*get(key));
    out.clear();
  }
  return out;
}

bool ConfigReader::boolean(StringRef key, bool def) {
  if (*failed || !has(key))
    return def;
  std::optional<bool> b = get(key)->getAsBoolean();
  if (!b) {
    error() << "field '" << field(key) << "' must be true or false, got "
            << describe(*get(key));
    return def;
  }
  return *b;
}

std::string ConfigReader::string(StringRef key, StringRef def) {
  if (*failed || !has(key))
    return def.str();
  std::optional<StringRef> s = get(key)->getAsString();
  if (!s) {
    error() << "field '" << field(key) << "' must be a string, got "
            << describe(*get(key));
    return def.str();
  }
  return s->str();
}

double ConfigReader::probability(StringRef key) {
  if (*failed || !has(key))
    return 0;
  std::optional<double> p = get(key)->getAsNumber();
  if (!p || *p < 0 || *p >= 1) {
    error() << "field '" << field(key) << "' must be a probability in [0, 1), got "
            << describe(*get(key));
    return 0;
  }
  return *p;
}

std::optional<double> ConfigReader::positiveNumber(StringRef key) {
  if (*failed || !has(key))
    return std::nullopt;
  std::optional<double> p = get(key)->getAsNumber();
  if (!p || !(*p > 0)) {
    error() << "field '" << field(key) << "' must be a positive number, got "
            << describe(*get(key));
    return std::nullopt;
  }
  return *p;
}

void ConfigReader::requireDivides(StringRef divisorKey, int64_t divisor,
                                  StringRef dividendKey, int64_t dividend) {
  if (!*failed && divisor > 0 && dividend % divisor != 0)
    error() << divisorKey << " (" << divisor << ") does not divide "
            << dividendKey << " (" << dividend << ")";
}

std::vector<std::string> ConfigReader::unreadFields() const {
  std::vector<std::string> out;
  for (const auto &kv : obj)
    if (!seen.contains(kv.first.str()))
      out.push_back(field(kv.first.str()));
  for (const auto &child : sections) {
    std::vector<std::string> inner = child->unreadFields();
    out.insert(out.end(), inner.begin(), inner.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

ConfigReader &ConfigReader::section(StringRef key) {
  static const llvm::json::Object kEmpty;
  const llvm::json::Object *inner = &kEmpty;
  if (has(key)) {
    inner = get(key)->getAsObject();
    if (!inner) {
      error() << "field '" << field(key) << "' must be an object, got "
              << describe(*get(key));
      inner = &kEmpty;
    }
  }
  sections.push_back(std::unique_ptr<ConfigReader>(
      new ConfigReader(*inner, loc, maxLayers)));
  ConfigReader &child = *sections.back();
  child.prefix = field(key) + ".";
  child.failed = failed;
  return child;
}

int64_t ConfigReader::product(StringRef what, int64_t a, int64_t b) {
  int64_t result;
  if (!llvm::MulOverflow(a, b, result))
    return result;
  error() << what << " (" << a << " x " << b
          << ") does not fit in 64 bits; no model is near that size";
  return 0;
}

std::string ConfigReader::describe(const llvm::json::Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  return s;
}

int64_t ConfigReader::checkedInteger(StringRef key, const llvm::json::Value &v,
                                     int64_t minimum) {
  std::optional<int64_t> i = v.getAsInteger();
  if (!i) {
    error() << "field '" << field(key) << "' must be an integer, got " << describe(v);
    return 0;
  }
  if (*i < minimum) {
    error() << "field '" << field(key) << "' must be "
            << (minimum > 0 ? "positive" : "non-negative") << ", got " << *i;
    return 0;
  }
  return *i;
}
