//===- HFConfig.cpp - Reading HuggingFace config.json files ---------------===//

#include "Stage/Target/HF/HFImport.h"

#include "HFFamilies.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Models/TransformerBuilder.h"
#include "Stage/Support/JsonLimits.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
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

/// The weights `c` builds: each parameter's name and shape under the
/// model's bindings, sorted; none when it does not build.
using WeightList = std::vector<std::pair<std::string, std::vector<int64_t>>>;
static std::optional<WeightList> weightsOf(const ModelConfig &c, Location loc) {
  BuildOptions o;
  o.batch = 1;
  o.seq = 1;
  OwningOpRef<ModuleOp> module =
      buildTransformer(loc->getContext(), loc, c, o);
  if (!module)
    return std::nullopt;
  FailureOr<sym::Bindings> b = getModuleBindings(*module);
  if (failed(b))
    return std::nullopt;
  WeightList weights;
  bool evaluated = true;
  module->walk([&](ParamOp p) {
    std::vector<int64_t> shape;
    for (const sym::Expr &d : p.getType().getDims()) {
      sym::Result<int64_t> v = d.evaluate(*b);
      evaluated &= bool(v);
      shape.push_back(v ? *v : -1);
    }
    weights.push_back({p.getName().str(), std::move(shape)});
  });
  if (!evaluated)
    return std::nullopt;
  llvm::sort(weights);
  return weights;
}

/// The supported families that can be an unknown architecture's config
/// under another name: each reads, or knows to be cost-free, every field of
/// it and accepts every value. Some families add structure no field states
/// (Qwen2's q/k/v biases, OLMo-2's norms), so the config alone determines
/// the model only when all of them build the same weights, names and
/// shapes; `disagree` says when they do not.
static std::vector<StringRef> familiesReadingAll(const llvm::json::Object &obj,
                                                 Location loc, int64_t maxLayers,
                                                 bool &disagree) {
  ScopedDiagnosticHandler quiet(loc->getContext(),
                                [](Diagnostic &) { return success(); });
  std::vector<StringRef> readers;
  std::optional<WeightList> first;
  disagree = false;
  for (const HFFamily &f : getHFFamilies()) {
    ConfigReader r(obj, loc, maxLayers);
    ModelConfig c;
    markCostFreeFields(r);
    f.read(r, c);
    if (!r.ok() || !r.unreadFields().empty())
      continue;
    c.architecture = f.architecture;
    std::optional<WeightList> weights = weightsOf(c, loc);
    if (!weights)
      continue;
    if (first && *weights != *first)
      disagree = true;
    if (!first)
      first = std::move(weights);
    readers.push_back(f.architecture);
  }
  return readers;
}

FailureOr<ModelConfig> mlir::stage::parseHFConfig(StringRef text, Location loc,
                                                  int64_t maxLayers,
                                                  bool allowUnreadFields) {
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
  ConfigReader r(*obj, loc, maxLayers);

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
  // Remote-code checkpoints spell some classes in another case
  // (Phi-3.5-MoE's PhiMoEForCausalLM is transformers' PhimoeForCausalLM).
  for (const HFFamily &f : getHFFamilies())
    if ((!arch.empty() && StringRef(arch).equals_insensitive(f.architecture)) ||
        (arch.empty() && modelType == f.modelType))
      family = &f;
  if (!family) {
    if (arch.empty() && modelType.empty())
      return r.error() << "missing field 'architectures' (or 'model_type')";
    std::string name = arch.empty() ? modelType : arch;
    std::string known;
    for (const HFFamily &f : getHFFamilies())
      known += (known.empty() ? "" : ", ") + std::string(f.architecture);
    bool disagree = false;
    std::vector<StringRef> readers = familiesReadingAll(*obj, loc, maxLayers, disagree);
    InFlightDiagnostic diag = r.error();
    diag << "unknown architecture '" << name << "'; ";
    if (disagree)
      diag << "the " << llvm::join(readers, ", ")
           << " importers each read all of its fields but build different "
              "weights from them (biases, norms or layouts no field states), "
              "so none is suggested";
    else if (readers.empty())
      diag << "no supported family reads all of its fields and takes their "
              "values, so none is suggested";
    else
      diag << "every field of it is one the " << llvm::join(readers, " and ")
           << " importer reads: if the model is that architecture under "
              "another name, set 'architectures' to it (the fields the "
              "config leaves out then take that family's defaults)";
    return diag << "; supported: " << known
                << ". Any other model can come in as linalg "
                   "(docs/Frontends.md)";
  }
  ModelConfig c;
  c.architecture = family->architecture;
  markCostFreeFields(r);
  family->read(r, c);
  if (!r.ok())
    return failure();
  // A field that may size something and that the family does not read
  // would be silently left out of the model.
  bool refused = false;
  for (const std::string &key : r.unreadFields()) {
    if (!looksShapeChanging(key))
      continue;
    if (allowUnreadFields) {
      emitWarning(loc) << "field '" << key << "' is not read by the "
                       << c.architecture
                       << " importer and may change the model's shape; the "
                          "model is built without it (--allow-unread-fields)";
      continue;
    }
    emitError(loc) << "field '" << key << "' is not read by the "
                   << c.architecture
                   << " importer and may change the model's shape; "
                      "--allow-unread-fields builds the model without it";
    refused = true;
  }
  if (refused)
    return failure();
  return c;
}
