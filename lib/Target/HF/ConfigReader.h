//===- ConfigReader.h - Typed access to a config.json object ----*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_HF_CONFIGREADER_H
#define STAGE_LIB_TARGET_HF_CONFIGREADER_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include <limits>
#include <memory>
#include <optional>
#include <string>

namespace mlir::stage {

/// Typed access to the fields of a config, reporting the first problem and
/// remembering which fields were looked at (the rest are checked for
/// fields that would change the model's shape: `unreadFields`).
class ConfigReader {
public:
  ConfigReader(const llvm::json::Object &obj, Location loc,
               int64_t maxLayers = std::numeric_limits<int64_t>::max())
      : obj(obj), loc(loc), maxLayers(maxLayers) {}

  bool ok() const { return !*failed; }
  /// Where the config's diagnostics point.
  Location location() const { return loc; }
  InFlightDiagnostic error() {
    *failed = true;
    return emitError(loc);
  }

  /// Whether `key` is present and not null.
  bool has(StringRef key);
  /// Whether `key` holds a string.
  bool isString(StringRef key);
  /// Marks fields as understood without reading them (their values do not
  /// change FLOPs, bytes or parameters: a norm's epsilon, RoPE's base).
  void understood(std::initializer_list<StringRef> keys);

  /// A required positive integer.
  int64_t integer(StringRef key);
  /// The model's layer count (a required positive integer), refused above
  /// the importer's limit before any reader lists the layers.
  int64_t layerCount(StringRef key);
  /// A positive integer that may be absent or null.
  std::optional<int64_t> optionalInteger(StringRef key);
  int64_t integerOr(StringRef key, int64_t def) {
    return optionalInteger(key).value_or(def);
  }
  /// The same with a default derived only when the field is absent (a
  /// product of other fields may not fit: `product`).
  int64_t integerOr(StringRef key, llvm::function_ref<int64_t()> def) {
    std::optional<int64_t> v = optionalInteger(key);
    return v ? *v : def();
  }
  /// A non-negative count that may be absent or null.
  int64_t countOr(StringRef key, int64_t def);
  /// A list of non-negative integers (absent or null: empty).
  std::vector<int64_t> integerList(StringRef key);
  /// A list of strings (absent or null: empty).
  std::vector<std::string> stringList(StringRef key);
  bool boolean(StringRef key, bool def);
  std::string string(StringRef key, StringRef def);
  /// A probability in [0, 1) that may be absent or null.
  double probability(StringRef key);
  /// A positive number that may be absent or null.
  std::optional<double> positiveNumber(StringRef key);

  /// `a` x `b`, a size derived from two fields (`what` names them, as in
  /// "expand x hidden_size"); beyond 64 bits it is an error, and 0.
  int64_t product(StringRef what, int64_t a, int64_t b);

  /// `num_attention_heads (7) does not divide hidden_size (4096)`.
  void requireDivides(StringRef divisorKey, int64_t divisor,
                      StringRef dividendKey, int64_t dividend);

  /// Fields present that nothing read, sorted (a section's as
  /// `section.field`).
  std::vector<std::string> unreadFields() const;
  /// The object `key` holds (DBRX's attn_config), read as a config of its
  /// own: its fields named `key.field` in errors and unread fields, its
  /// errors this reader's. An absent section reads as empty (defaults).
  ConfigReader &section(StringRef key);

  static std::string describe(const llvm::json::Value &v);

private:
  const llvm::json::Value *get(StringRef key);
  int64_t checkedInteger(StringRef key, const llvm::json::Value &v,
                         int64_t minimum);

  const llvm::json::Object &obj;
  Location loc;
  int64_t maxLayers;
  /// Whether an error was emitted: a section shares its parent's.
  bool ownFailed = false;
  bool *failed = &ownFailed;
  llvm::StringSet<> seen;
  /// "attn_config." for a section's fields.
  std::string prefix;
  std::vector<std::unique_ptr<ConfigReader>> sections;

  std::string field(StringRef key) const { return prefix + key.str(); }
};

} // namespace mlir::stage

#endif // STAGE_LIB_TARGET_HF_CONFIGREADER_H
