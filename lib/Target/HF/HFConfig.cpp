//===- HFConfig.cpp - Reading HuggingFace config.json files ---------------===//

#include "Stage/Target/HF/HFImport.h"

#include "HFFamilies.h"

#include "Stage/Support/JsonLimits.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::stage;

/// Whether an unread field's name says it sizes something (a width, a
/// count of layers, heads or experts, a window): ignoring it could change
/// the model's shape.
static bool looksShapeChanging(StringRef key) {
  static const char *const kWords[] = {
      "size",   "dim",    "num_",   "n_",     "layer",  "expert", "head",
      "window", "rank",   "period", "offset", "vocab",  "lora",   "moe",
      "kv",     "sparse", "state",  "conv",   "expand", "ffn",    "inner",
      "mlp",    "proj",   "group",  "shared", "block",  "chunk"};
  return llvm::any_of(kWords, [&](const char *w) { return key.contains(w); });
}

/// The supported architecture closest in spelling to `name`.
static StringRef nearestFamily(StringRef name) {
  StringRef best;
  unsigned bestDistance = ~0u;
  for (const HFFamily &f : getHFFamilies())
    for (StringRef candidate : {f.architecture, f.modelType}) {
      // Case aside: Qwen2MoEForCausalLM is Qwen2MoeForCausalLM.
      unsigned d = StringRef(name.lower()).edit_distance(candidate.lower());
      if (d < bestDistance) {
        bestDistance = d;
        best = f.architecture;
      }
    }
  return best;
}

FailureOr<ModelConfig> mlir::stage::parseHFConfig(StringRef text, Location loc,
                                                  int64_t maxLayers) {
  llvm::Expected<llvm::json::Value> parsed = sym::parseJsonWithinLimits(text);
  if (!parsed) {
    // llvm::json reports "[line:col, byte=N]: message"; point at line:col.
    std::string msg = llvm::toString(parsed.takeError());
    unsigned line = 0, col = 0;
    Location at = loc;
    if (sscanf(msg.c_str(), "[%u:%u", &line, &col) == 2)
      if (auto file = dyn_cast<FileLineColLoc>(loc))
        at = FileLineColLoc::get(file.getFilename(), line, col);
    StringRef text = StringRef(msg).split("]: ").second;
    return emitError(at) << "malformed JSON: " << (text.empty() ? msg : text);
  }
  const llvm::json::Object *obj = parsed->getAsObject();
  if (!obj)
    return emitError(loc) << "a config must be a JSON object";
  ConfigReader r(*obj, loc);

  std::string arch;
  if (const llvm::json::Value *a = obj->get("architectures")) {
    const llvm::json::Array *list = a->getAsArray();
    if (!list || list->empty() || !(*list)[0].getAsString())
      return r.error() << "field 'architectures' must be a non-empty list of "
                          "strings, got "
                       << ConfigReader::describe(*a);
    arch = (*list)[0].getAsString()->str();
  }
  std::string modelType = r.string("model_type", "");
  if (!r.ok())
    return failure();
  const HFFamily *family = nullptr;
  for (const HFFamily &f : getHFFamilies())
    if ((!arch.empty() && arch == f.architecture) ||
        (arch.empty() && modelType == f.modelType))
      family = &f;
  if (!family) {
    if (arch.empty() && modelType.empty())
      return r.error() << "missing field 'architectures' (or 'model_type')";
    std::string name = arch.empty() ? modelType : arch;
    std::string known;
    for (const HFFamily &f : getHFFamilies())
      known += (known.empty() ? "" : ", ") + std::string(f.architecture);
    return r.error() << "unknown architecture '" << name
                     << "'; the nearest supported one is '"
                     << nearestFamily(name)
                     << "' (set 'architectures' to it if the model is that "
                        "family with other sizes); supported: "
                     << known
                     << ". Any other model can come in as linalg "
                        "(docs/Frontends.md)";
  }
  ModelConfig c;
  c.architecture = family->architecture;
  markCostFreeFields(r);
  family->read(r, c);
  if (!r.ok())
    return failure();
  // The importer lists each layer's kind to find the model's repeated
  // layers: a count far beyond any model's would take its time and memory.
  if (c.layers > maxLayers)
    return emitError(loc) << "the config has " << c.layers
                          << " layers, more than the importer's limit of "
                          << maxLayers
                          << " (--max-layers; it lists each layer's kind); the "
                             "layer count stays symbolic (L) after import: "
                             "import fewer and bind L with --bind=L=N";
  for (const std::string &key : r.unreadFields())
    if (looksShapeChanging(key))
      emitWarning(loc) << "field '" << key << "' is not read by the "
                       << c.architecture
                       << " importer and may change the model's shape; the "
                          "model is built without it";
  return c;
}
