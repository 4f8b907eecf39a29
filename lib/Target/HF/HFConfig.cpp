//===- HFConfig.cpp - Reading HuggingFace config.json files ---------------===//

#include "Stage/Target/HF/HFImport.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/JSON.h"

#include <functional>

using namespace mlir;
using namespace mlir::stage;

namespace {
/// Typed access to the fields of a config, reporting the first problem.
class ConfigReader {
public:
  ConfigReader(const llvm::json::Object &obj, Location loc)
      : obj(obj), loc(loc) {}

  bool ok() const { return !failed; }
  InFlightDiagnostic error() {
    failed = true;
    return emitError(loc);
  }

  bool has(StringRef key) const {
    const llvm::json::Value *v = obj.get(key);
    return v && v->kind() != llvm::json::Value::Null;
  }

  /// A required positive integer.
  int64_t integer(StringRef key) {
    if (failed)
      return 0;
    const llvm::json::Value *v = obj.get(key);
    if (!v) {
      error() << "missing field '" << key << "'";
      return 0;
    }
    return checkedInteger(key, *v, 1);
  }

  /// A positive integer that may be absent or null.
  std::optional<int64_t> optionalInteger(StringRef key) {
    if (failed || !has(key))
      return std::nullopt;
    return checkedInteger(key, *obj.get(key), 1);
  }

  int64_t integerOr(StringRef key, int64_t def) {
    return optionalInteger(key).value_or(def);
  }

  /// A non-negative count that may be absent or null.
  int64_t countOr(StringRef key, int64_t def) {
    if (failed || !has(key))
      return def;
    return checkedInteger(key, *obj.get(key), 0);
  }

  bool boolean(StringRef key, bool def) {
    if (failed || !has(key))
      return def;
    std::optional<bool> b = obj.get(key)->getAsBoolean();
    if (!b) {
      error() << "field '" << key << "' must be true or false, got "
              << describe(*obj.get(key));
      return def;
    }
    return *b;
  }

  std::string string(StringRef key, StringRef def) {
    if (failed || !has(key))
      return def.str();
    std::optional<StringRef> s = obj.get(key)->getAsString();
    if (!s) {
      error() << "field '" << key << "' must be a string, got "
              << describe(*obj.get(key));
      return def.str();
    }
    return s->str();
  }

  /// A probability in [0, 1) that may be absent or null.
  double probability(StringRef key) {
    if (failed || !has(key))
      return 0;
    std::optional<double> p = obj.get(key)->getAsNumber();
    if (!p || *p < 0 || *p >= 1) {
      error() << "field '" << key << "' must be a probability in [0, 1), got "
              << describe(*obj.get(key));
      return 0;
    }
    return *p;
  }

  /// `num_attention_heads (7) does not divide hidden_size (4096)`.
  void requireDivides(StringRef divisorKey, int64_t divisor,
                      StringRef dividendKey, int64_t dividend) {
    if (!failed && divisor > 0 && dividend % divisor != 0)
      error() << divisorKey << " (" << divisor << ") does not divide "
              << dividendKey << " (" << dividend << ")";
  }

  static std::string describe(const llvm::json::Value &v) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << v;
    return s;
  }

private:
  int64_t checkedInteger(StringRef key, const llvm::json::Value &v,
                         int64_t minimum) {
    std::optional<int64_t> i = v.getAsInteger();
    if (!i) {
      error() << "field '" << key << "' must be an integer, got "
              << describe(v);
      return 0;
    }
    if (*i < minimum) {
      error() << "field '" << key << "' must be "
              << (minimum > 0 ? "positive" : "non-negative") << ", got " << *i;
      return 0;
    }
    return *i;
  }

  const llvm::json::Object &obj;
  Location loc;
  bool failed = false;
};
} // namespace

/// Llama, Mistral, Qwen2 and the attention/MLP part of Mixtral.
static void readLlamaFamily(ConfigReader &r, ModelConfig &c, bool qkvBias) {
  c.hidden = r.integer("hidden_size");
  c.layers = r.integer("num_hidden_layers");
  c.heads = r.integer("num_attention_heads");
  c.kvHeads = r.integerOr("num_key_value_heads", c.heads);
  c.ffn = r.integer("intermediate_size");
  c.vocab = r.integer("vocab_size");
  c.maxPositions = r.integerOr("max_position_embeddings", 4096);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", false);
  bool attentionBias = r.boolean("attention_bias", false);
  c.qkvBias = qkvBias || attentionBias;
  c.outputBias = attentionBias;
  c.mlpBias = r.boolean("mlp_bias", false);
  if (!r.ok())
    return;
  if (std::optional<int64_t> hd = r.optionalInteger("head_dim")) {
    c.headDim = *hd;
  } else {
    r.requireDivides("num_attention_heads", c.heads, "hidden_size", c.hidden);
    c.headDim = c.hidden / c.heads;
  }
  r.requireDivides("num_key_value_heads", c.kvHeads, "num_attention_heads",
                   c.heads);
  c.attentionDropout = r.probability("attention_dropout");
  c.norm = NormStyle::RMS;
  c.activation = ActivationKind::SwiGLU;
}

static void readGPT2(ConfigReader &r, ModelConfig &c) {
  c.hidden = r.integer("n_embd");
  c.layers = r.integer("n_layer");
  c.heads = r.integer("n_head");
  c.vocab = r.integer("vocab_size");
  c.maxPositions =
      r.has("n_positions") ? r.integer("n_positions") : r.integer("n_ctx");
  c.ffn = r.integerOr("n_inner", 4 * c.hidden);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", true);
  std::string act = r.string("activation_function", "gelu_new");
  if (!r.ok())
    return;
  if (!StringRef(act).starts_with("gelu"))
    r.error() << "field 'activation_function' is '" << act
              << "'; the GPT-2 family supports the gelu variants";
  r.requireDivides("n_head", c.heads, "n_embd", c.hidden);
  c.kvHeads = c.heads;
  c.headDim = c.hidden / c.heads;
  c.learnedPositions = true;
  c.embeddingDropout = r.probability("embd_pdrop");
  c.attentionDropout = r.probability("attn_pdrop");
  c.residualDropout = r.probability("resid_pdrop");
  c.qkvBias = c.outputBias = c.mlpBias = c.normBias = true;
  c.norm = NormStyle::Layer;
  c.activation = ActivationKind::GeLU;
}

static void readMixtral(ConfigReader &r, ModelConfig &c) {
  readLlamaFamily(r, c, /*qkvBias=*/false);
  MoEConfig m;
  m.experts = r.integer("num_local_experts");
  m.topK = r.integer("num_experts_per_tok");
  m.expertFfn = c.ffn;
  m.scoring = RouterScoring::Softmax;
  if (r.ok() && m.topK > m.experts)
    r.error() << "num_experts_per_tok (" << m.topK
              << ") exceeds num_local_experts (" << m.experts << ")";
  c.moe = m;
}

static void readDeepSeek(ConfigReader &r, ModelConfig &c, bool v3) {
  c.hidden = r.integer("hidden_size");
  c.layers = r.integer("num_hidden_layers");
  c.heads = r.integer("num_attention_heads");
  c.ffn = r.integer("intermediate_size");
  c.vocab = r.integer("vocab_size");
  c.maxPositions = r.integerOr("max_position_embeddings", 4096);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", false);
  c.attention = AttentionKind::Latent;
  c.latent.qLoraRank = r.optionalInteger("q_lora_rank");
  c.latent.kvLoraRank = r.integer("kv_lora_rank");
  c.latent.qkNopeHeadDim = r.integer("qk_nope_head_dim");
  c.latent.qkRopeHeadDim = r.integer("qk_rope_head_dim");
  c.latent.vHeadDim = r.integer("v_head_dim");
  c.kvHeads = c.heads;
  c.norm = NormStyle::RMS;
  c.activation = ActivationKind::SwiGLU;
  if (!r.has("n_routed_experts"))
    return; // a dense DeepSeek model
  MoEConfig m;
  m.experts = r.integer("n_routed_experts");
  m.topK = r.integer("num_experts_per_tok");
  m.expertFfn = r.integer("moe_intermediate_size");
  m.sharedExperts = r.countOr("n_shared_experts", 0);
  m.firstDenseLayers = r.countOr("first_k_dense_replace", 0);
  m.layerFrequency = r.integerOr("moe_layer_freq", 1);
  std::string scoring = r.string("scoring_func", v3 ? "sigmoid" : "softmax");
  std::string topkMethod = r.string("topk_method", v3 ? "noaux_tc" : "greedy");
  if (!r.ok())
    return;
  if (scoring != "softmax" && scoring != "sigmoid")
    r.error() << "field 'scoring_func' is '" << scoring
              << "'; expected 'softmax' or 'sigmoid'";
  m.scoring = scoring == "sigmoid" ? RouterScoring::Sigmoid
                                   : RouterScoring::Softmax;
  m.routerBias = topkMethod == "noaux_tc";
  if (r.ok() && m.topK > m.experts)
    r.error() << "num_experts_per_tok (" << m.topK
              << ") exceeds n_routed_experts (" << m.experts << ")";
  if (r.ok() && m.firstDenseLayers > c.layers)
    r.error() << "first_k_dense_replace (" << m.firstDenseLayers
              << ") exceeds num_hidden_layers (" << c.layers << ")";
  c.moe = m;
}

namespace {
struct Family {
  const char *architecture;
  const char *modelType;
  std::function<void(ConfigReader &, ModelConfig &)> read;
};
} // namespace

static const Family kFamilies[] = {
    {"LlamaForCausalLM", "llama",
     [](ConfigReader &r, ModelConfig &c) { readLlamaFamily(r, c, false); }},
    {"MistralForCausalLM", "mistral",
     [](ConfigReader &r, ModelConfig &c) { readLlamaFamily(r, c, false); }},
    {"Qwen2ForCausalLM", "qwen2",
     [](ConfigReader &r, ModelConfig &c) { readLlamaFamily(r, c, true); }},
    {"GPT2LMHeadModel", "gpt2", readGPT2},
    {"MixtralForCausalLM", "mixtral", readMixtral},
    {"DeepseekV2ForCausalLM", "deepseek_v2",
     [](ConfigReader &r, ModelConfig &c) { readDeepSeek(r, c, false); }},
    {"DeepseekV3ForCausalLM", "deepseek_v3",
     [](ConfigReader &r, ModelConfig &c) { readDeepSeek(r, c, true); }},
};

FailureOr<ModelConfig> mlir::stage::parseHFConfig(StringRef text,
                                                  Location loc) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
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
  const Family *family = nullptr;
  for (const Family &f : kFamilies)
    if ((!arch.empty() && arch == f.architecture) ||
        (arch.empty() && modelType == f.modelType))
      family = &f;
  if (!family) {
    std::string known;
    for (const Family &f : kFamilies)
      known += (known.empty() ? "" : ", ") + std::string(f.architecture);
    if (arch.empty() && modelType.empty())
      return r.error() << "missing field 'architectures' (or 'model_type')";
    return r.error() << "unknown architecture '"
                     << (arch.empty() ? modelType : arch)
                     << "'; supported: " << known;
  }
  ModelConfig c;
  c.architecture = family->architecture;
  family->read(r, c);
  if (!r.ok())
    return failure();
  return c;
}
