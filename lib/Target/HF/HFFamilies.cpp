//===- HFFamilies.cpp - The model families the importer reads -------------===//
//
// One reader per family of HuggingFace configs. Each reads every field that
// changes FLOPs, bytes or parameters, and refuses values it cannot model;
// the field names and their defaults are those of the transformers config
// classes.
//
//===----------------------------------------------------------------------===//

#include "HFFamilies.h"

using namespace mlir;
using namespace mlir::stage;

void mlir::stage::markCostFreeFields(ConfigReader &r) {
  // clang-format off
  static const char *const kFields[] = {
      "architectures", "model_type", "_name_or_path", "torch_dtype", "dtype",
      "transformers_version", "use_cache", "bos_token_id", "eos_token_id",
      "pad_token_id", "sep_token_id", "decoder_start_token_id",
      "initializer_range", "initializer_factor", "rms_norm_eps",
      "layer_norm_eps", "layer_norm_epsilon", "norm_eps", "rope_theta",
      "rope_scaling", "rope_parameters", "rope_local_base_freq",
      "partial_rotary_factor", "original_max_position_embeddings", "auto_map",
      "output_router_logits", "router_aux_loss_coef", "router_z_loss_coef",
      "router_jitter_noise", "pretraining_tp", "quantization_config",
      "tokenizer_class", "is_decoder", "attn_implementation",
      "_attn_implementation", "query_pre_attn_scalar", "cache_implementation",
      "use_bfloat16", "id2label", "label2id", "task_specific_params",
      "return_dict", "output_attentions", "output_hidden_states",
      "tie_encoder_decoder", "torchscript", "chunk_size_feed_forward",
      "problem_type", "use_return_dict", "gradient_checkpointing", "max_length",
      "vocab_file",
  };
  // clang-format on
  for (const char *field : kFields)
    r.understood({field});
}

/// `hidden_act` (or the family's own key): the MLP's nonlinearity.
static void readActivation(ConfigReader &r, ModelConfig &c, StringRef key,
                           StringRef def) {
  std::string act = r.string(key, def);
  if (!r.ok())
    return;
  static const std::pair<const char *, Activation> kNames[] = {
      {"silu", Activation::SiLU},
      {"swish", Activation::SiLU},
      {"gelu", Activation::GeLU},
      {"gelu_new", Activation::GeLU},
      {"gelu_fast", Activation::GeLU},
      {"gelu_pytorch_tanh", Activation::GeLU},
      {"gelu_python", Activation::GeLU},
      {"gelu_accurate", Activation::GeLU},
      {"quick_gelu", Activation::GeLU},
      {"relu", Activation::ReLU},
      {"relu2", Activation::ReLUSquared},
  };
  for (auto [name, a] : kNames)
    if (act == name) {
      c.activation = a;
      return;
    }
  std::string known;
  for (auto [name, a] : kNames)
    known += (known.empty() ? "" : ", ") + std::string(name);
  r.error() << "field '" << key << "' is '" << act
            << "', which the importer cannot cost; supported: " << known;
}

/// Mistral's `sliding_window`: every layer attends to the last W keys.
static void readSlidingWindow(ConfigReader &r, ModelConfig &c) {
  c.slidingWindow = r.optionalInteger("sliding_window");
}

/// Qwen's `use_sliding_window`: layers from `max_window_layers` on slide;
/// without it `sliding_window` is unused.
static void readQwenSlidingWindow(ConfigReader &r, ModelConfig &c) {
  r.understood({"sliding_window", "max_window_layers"});
  if (!r.boolean("use_sliding_window", false))
    return;
  c.slidingWindow = r.integer("sliding_window");
  int64_t first = r.countOr("max_window_layers", c.layers);
  c.slidingLayers.assign(c.layers, false);
  for (int64_t i = first; i < c.layers; ++i)
    c.slidingLayers[i] = true;
}

/// `layer_types` when the config lists them: whether each layer is
/// `marked` ("sliding_attention", "chunked_attention", "linear_attention")
/// rather than "full_attention". Empty when the config does not list them,
/// or lists them wrongly (an error).
static std::vector<bool> readLayerTypes(ConfigReader &r, int64_t layers,
                                        StringRef marked) {
  std::vector<std::string> types = r.stringList("layer_types");
  std::vector<bool> marks;
  if (types.empty())
    return marks;
  if (int64_t(types.size()) != layers) {
    r.error() << "field 'layer_types' lists " << types.size()
              << " layers but num_hidden_layers is " << layers;
    return marks;
  }
  for (const std::string &t : types) {
    if (t != marked && t != "full_attention") {
      r.error() << "field 'layer_types' has '" << t << "'; expected '"
                << marked << "' or 'full_attention'";
      return {};
    }
    marks.push_back(t == marked);
  }
  return marks;
}

/// The sizes of a decoder with grouped-query attention: width, depth,
/// heads and kv heads, MLP width, vocabulary, and the trained context (the
/// family's default when the config omits it).
static void readSizes(ConfigReader &r, ModelConfig &c,
                      int64_t defaultPositions) {
  c.hidden = r.integer("hidden_size");
  c.layers = r.layerCount("num_hidden_layers");
  c.heads = r.integer("num_attention_heads");
  c.kvHeads = r.integerOr("num_key_value_heads", c.heads);
  c.ffn = r.integer("intermediate_size");
  c.vocab = r.integer("vocab_size");
  c.maxPositions = r.integerOr("max_position_embeddings", defaultPositions);
}

/// The fields of Llama-style decoders (Llama, Mistral, Qwen, Phi-3, OLMo-2,
/// Gemma): sizes, heads, biases, dropout.
static void readDecoder(ConfigReader &r, ModelConfig &c, bool qkvBias,
                        bool tiedByDefault = false) {
  readSizes(r, c, 4096);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", tiedByDefault);
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
  c.activation = Activation::SiLU;
  c.gatedMlp = true;
  readActivation(r, c, "hidden_act", "silu");
}

static void readLlama(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false);
}

static void readMistral(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false);
  readSlidingWindow(r, c);
}

static void readQwen2(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, true);
  readQwenSlidingWindow(r, c);
}

static void readQwen3(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false);
  readQwenSlidingWindow(r, c);
  c.qkNorm = QKNorm::PerHead;
}

static void readPhi3(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false);
  readSlidingWindow(r, c);
  c.fusedQKV = c.fusedGateUp = true;
  c.embeddingDropout = r.probability("embd_pdrop");
  c.residualDropout = r.probability("resid_pdrop");
}

static void readOlmo2(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false);
  c.normPlacement = NormPlacement::Post;
  c.qkNorm = QKNorm::AllHeads;
}

/// The channels of a head RoPE rotates, from the fraction `key` gives
/// (transformers: int(head_dim x fraction)); 0 when all do.
static void readRotaryFraction(ConfigReader &r, ModelConfig &c, StringRef key,
                               double def) {
  std::optional<double> f = r.has(key) ? r.positiveNumber(key) : def;
  if (!r.ok() || !f)
    return;
  if (*f > 1) {
    r.error() << "field '" << key << "' must be at most 1, got " << *f;
    return;
  }
  int64_t rotated = int64_t(double(c.headDim) * *f);
  if (rotated < 2 || rotated % 2) {
    r.error() << "field '" << key << "' rotates " << rotated << " of the "
              << c.headDim << " channels of a head; RoPE needs an even "
                              "count of at least 2";
    return;
  }
  c.rotaryDim = rotated < c.headDim ? rotated : 0;
}

/// GPT-NeoX (Pythia, GPT-NeoX-20B): fused query_key_value with biases,
/// LayerNorms with biases, a GeLU MLP with biases, RoPE on rotary_pct of
/// each head, and by default parallel attention and MLP blocks, each with
/// its own norm of the same input (use_parallel_residual).
static void readGPTNeoX(ConfigReader &r, ModelConfig &c) {
  readSizes(r, c, 2048);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", false);
  c.qkvBias = c.outputBias = r.boolean("attention_bias", true);
  c.mlpBias = true;
  bool parallel = r.boolean("use_parallel_residual", true);
  c.attentionDropout = r.probability("attention_dropout");
  c.residualDropout = r.probability("hidden_dropout");
  r.understood({"rotary_emb_base", "classifier_dropout"});
  readActivation(r, c, "hidden_act", "gelu");
  if (!r.ok())
    return;
  r.requireDivides("num_attention_heads", c.heads, "hidden_size", c.hidden);
  r.requireDivides("num_key_value_heads", c.kvHeads, "num_attention_heads",
                   c.heads);
  if (!r.ok())
    return;
  c.headDim = c.hidden / c.heads;
  readRotaryFraction(r, c,
                     r.has("rotary_pct") ? "rotary_pct"
                                         : "partial_rotary_factor",
                     0.25);
  c.norm = NormStyle::Layer;
  c.normBias = true;
  c.gatedMlp = false;
  c.fusedQKV = true;
  c.normPlacement = parallel ? NormPlacement::Parallel : NormPlacement::Pre;
  c.parallelNorms = parallel ? 2 : 1;
}

/// Command-R (Cohere): a Llama-style SwiGLU decoder whose attention and
/// MLP read one LayerNorm (weight, no bias) of the same input in parallel,
/// tied embeddings, logits times logit_scale, optionally per-head LayerNorms
/// of q and k (use_qk_norm, Command-R+).
static void readCohere(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false, /*tiedByDefault=*/true);
  bool qkNorm = r.boolean("use_qk_norm", false);
  std::optional<double> scale =
      r.has("logit_scale") ? r.positiveNumber("logit_scale") : 0.0625;
  if (!r.ok())
    return;
  c.norm = NormStyle::Layer;
  c.normBias = false;
  c.normPlacement = NormPlacement::Parallel;
  c.parallelNorms = 1;
  c.scaleLogits = scale && *scale != 1;
  if (qkNorm)
    c.qkNorm = QKNorm::AllHeads;
}

/// StarCoder2: grouped-query attention and a GeLU MLP (c_fc, c_proj), all
/// with biases (use_bias), LayerNorms with biases, sliding-window attention.
static void readStarcoder2(ConfigReader &r, ModelConfig &c) {
  readSizes(r, c, 4096);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", true);
  c.qkvBias = c.outputBias = c.mlpBias = r.boolean("use_bias", true);
  c.attentionDropout = r.probability("attention_dropout");
  c.residualDropout = r.probability("residual_dropout");
  c.embeddingDropout = r.probability("embedding_dropout");
  r.understood({"norm_epsilon"});
  // The original configs name the only kinds transformers builds.
  std::string mlp = r.string("mlp_type", "default");
  std::string norm = r.string("norm_type", "layer_norm");
  if (r.ok() && mlp != "default")
    r.error() << "field 'mlp_type' is '" << mlp
              << "'; StarCoder2's MLP is 'default' (c_fc, c_proj)";
  if (r.ok() && norm != "layer_norm")
    r.error() << "field 'norm_type' is '" << norm
              << "'; StarCoder2's norms are 'layer_norm'";
  readActivation(r, c, "hidden_act", "gelu_pytorch_tanh");
  readSlidingWindow(r, c);
  if (!r.ok())
    return;
  r.requireDivides("num_attention_heads", c.heads, "hidden_size", c.hidden);
  r.requireDivides("num_key_value_heads", c.kvHeads, "num_attention_heads",
                   c.heads);
  c.headDim = c.hidden / c.heads;
  c.norm = NormStyle::Layer;
  c.normBias = true;
  c.gatedMlp = false;
}

/// Gemma, Gemma-2 and Gemma-3's text model: GeGLU, tied and scaled
/// embeddings, an explicit head_dim.
static void readGemmaCommon(ConfigReader &r, ModelConfig &c) {
  readSizes(r, c, 8192);
  c.headDim = r.integerOr("head_dim", 256);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", true);
  c.qkvBias = c.outputBias = r.boolean("attention_bias", false);
  c.attentionDropout = r.probability("attention_dropout");
  r.requireDivides("num_key_value_heads", c.kvHeads, "num_attention_heads",
                   c.heads);
  c.norm = NormStyle::RMS;
  c.gatedMlp = true;
  c.scaleEmbeddings = true;
  // Gemma's configs carry both keys; hidden_activation is the one used.
  r.understood({"hidden_act"});
  readActivation(
      r, c, r.has("hidden_activation") ? "hidden_activation" : "hidden_act",
      "gelu_pytorch_tanh");
}

static void readGemma(ConfigReader &r, ModelConfig &c) {
  readGemmaCommon(r, c);
}

static void readGemma2(ConfigReader &r, ModelConfig &c) {
  readGemmaCommon(r, c);
  c.normPlacement = NormPlacement::Sandwich;
  c.slidingWindow = r.optionalInteger("sliding_window");
  c.slidingLayers = readLayerTypes(r, c.layers, "sliding_attention");
  if (c.slidingLayers.empty()) {
    for (int64_t i = 0; i < c.layers; ++i)
      c.slidingLayers.push_back(i % 2 == 0);
  }
  c.attentionSoftcap = r.positiveNumber("attn_logit_softcapping");
  c.logitSoftcap = r.positiveNumber("final_logit_softcapping");
}

static void readGemma3(ConfigReader &r, ModelConfig &c) {
  readGemmaCommon(r, c);
  c.normPlacement = NormPlacement::Sandwich;
  c.qkNorm = QKNorm::PerHead;
  c.slidingWindow = r.optionalInteger("sliding_window");
  int64_t pattern = r.integerOr("sliding_window_pattern", 6);
  if (!r.ok())
    return; // a refused pattern (0) must not divide
  c.slidingLayers = readLayerTypes(r, c.layers, "sliding_attention");
  if (c.slidingLayers.empty()) {
    for (int64_t i = 0; i < c.layers; ++i)
      c.slidingLayers.push_back((i + 1) % pattern != 0);
  }
  c.attentionSoftcap = r.positiveNumber("attn_logit_softcapping");
  c.logitSoftcap = r.positiveNumber("final_logit_softcapping");
}

/// Falcon: fused query_key_value, multi-query (or grouped with
/// new_decoder_architecture), attention and MLP in parallel from one or
/// two LayerNorms, a GELU MLP of 4 D.
static void readFalcon(ConfigReader &r, ModelConfig &c) {
  c.hidden = r.integer("hidden_size");
  c.layers =
      r.layerCount(r.has("n_layer") ? "n_layer" : "num_hidden_layers");
  c.heads =
      r.has("n_head") ? r.integer("n_head") : r.integer("num_attention_heads");
  c.vocab = r.integer("vocab_size");
  c.maxPositions = r.integerOr("max_position_embeddings", 2048);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", true);
  bool newArch = r.boolean("new_decoder_architecture", false);
  bool multiQuery = r.boolean("multi_query", true);
  bool parallel = r.boolean("parallel_attn", true);
  bool bias = r.boolean("bias", false);
  bool alibi = r.boolean("alibi", false);
  // Which tensor the residual starts from: no change in cost.
  r.understood({"apply_residual_connection_post_layernorm"});
  c.ffn = r.integerOr("ffn_hidden_size", [&] {
    return r.product("4 x hidden_size", 4, c.hidden);
  });
  int64_t kv = r.has("n_head_kv") ? r.integer("n_head_kv")
                                  : r.integerOr("num_kv_heads", c.heads);
  int64_t norms = r.integerOr("num_ln_in_parallel_attn", 2);
  c.attentionDropout = r.probability("attention_dropout");
  c.residualDropout = r.probability("hidden_dropout");
  readActivation(r, c, "activation", "gelu");
  if (!r.ok())
    return;
  if (alibi)
    r.error() << "field 'alibi' is true: ALiBi attention biases are not "
                 "modeled (Falcon-7B and -40B use RoPE)";
  r.requireDivides("num_attention_heads", c.heads, "hidden_size", c.hidden);
  c.headDim = c.hidden / c.heads;
  c.kvHeads = newArch ? kv : multiQuery ? 1 : c.heads;
  r.requireDivides("num_kv_heads", c.kvHeads, "num_attention_heads", c.heads);
  c.qkvBias = c.outputBias = c.mlpBias = bias;
  c.norm = NormStyle::Layer;
  c.normBias = true;
  c.gatedMlp = false;
  c.fusedQKV = true;
  c.normPlacement =
      parallel || newArch ? NormPlacement::Parallel : NormPlacement::Pre;
  c.parallelNorms = newArch ? norms : 1;
  if (r.ok() && (c.parallelNorms < 1 || c.parallelNorms > 2))
    r.error() << "field 'num_ln_in_parallel_attn' must be 1 or 2, got "
              << c.parallelNorms;
}

static void readGPT2(ConfigReader &r, ModelConfig &c) {
  c.hidden = r.integer("n_embd");
  c.layers = r.layerCount("n_layer");
  c.heads = r.integer("n_head");
  c.vocab = r.integer("vocab_size");
  c.maxPositions =
      r.has("n_positions") ? r.integer("n_positions") : r.integer("n_ctx");
  r.understood({"n_ctx"});
  c.ffn = r.integerOr("n_inner",
                      [&] { return r.product("4 x n_embd", 4, c.hidden); });
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
  r.understood({"summary_type", "summary_use_proj", "summary_activation",
                "summary_proj_to_labels", "summary_first_dropout",
                "scale_attn_weights", "reorder_and_upcast_attn",
                "scale_attn_by_inverse_layer_idx"});
  c.qkvBias = c.outputBias = c.mlpBias = c.normBias = true;
  c.norm = NormStyle::Layer;
  c.activation = Activation::GeLU;
  c.gatedMlp = false;
}

static void requireTopK(ConfigReader &r, const MoEConfig &m,
                        StringRef expertsKey) {
  if (r.ok() && m.topK > m.experts)
    r.error() << "num_experts_per_tok (" << m.topK << ") exceeds " << expertsKey
              << " (" << m.experts << ")";
}

/// Mixtral's experts (and Granite-MoE's, Phi-3.5-MoE's):
/// num_local_experts SwiGLU experts of intermediate_size in every layer
/// behind a top-k softmax router.
static void readLocalExperts(ConfigReader &r, ModelConfig &c) {
  MoEConfig m;
  m.experts = r.integer("num_local_experts");
  m.topK = r.integer("num_experts_per_tok");
  m.expertFfn = c.ffn;
  m.scoring = RouterScoring::Softmax;
  requireTopK(r, m, "num_local_experts");
  c.moe = m;
}

static void readMixtral(ConfigReader &r, ModelConfig &c) {
  readMistral(r, c);
  readLocalExperts(r, c);
}

/// Qwen2-MoE and Qwen3-MoE: routed experts of moe_intermediate_size every
/// decoder_sparse_step-th layer except mlp_only_layers; Qwen2-MoE adds a
/// shared expert with a sigmoid gate.
static void readQwenMoE(ConfigReader &r, ModelConfig &c, bool sharedExpert) {
  MoEConfig m;
  m.experts = r.integer("num_experts");
  m.topK = r.integer("num_experts_per_tok");
  m.expertFfn = r.integer("moe_intermediate_size");
  int64_t step = r.integerOr("decoder_sparse_step", 1);
  m.layerPeriod = step;
  m.layerPhase = step - 1;
  m.denseLayers = r.integerList("mlp_only_layers");
  // Renormalizing the top-k weights costs 2 K per token: not counted.
  r.boolean("norm_topk_prob", false);
  if (sharedExpert) {
    m.sharedFfn = r.countOr("shared_expert_intermediate_size", 0);
    m.sharedExpertGate = m.sharedFfn > 0;
  }
  requireTopK(r, m, "num_experts");
  for (int64_t l : m.denseLayers)
    if (r.ok() && l >= c.layers)
      r.error() << "mlp_only_layers lists layer " << l << " but the model has "
                << c.layers << " layers";
  c.moe = m;
}

/// OLMoE: Llama's pre-norm layer with q and k RMS-normed over all heads
/// (q_norm of hidden_size, k_norm of the kv heads' channels) and
/// num_experts SwiGLU experts of intermediate_size in every layer behind a
/// top-k softmax router; clip_qkv clamps q, k and v.
static void readOlmoe(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false);
  c.qkNorm = QKNorm::AllHeads;
  std::optional<double> clip = r.positiveNumber("clip_qkv");
  c.clipQKV = clip.has_value();
  MoEConfig m;
  m.experts = r.integer("num_experts");
  m.topK = r.integer("num_experts_per_tok");
  m.expertFfn = c.ffn;
  // Renormalizing the top-k weights costs 2 K per token: not counted.
  r.boolean("norm_topk_prob", false);
  requireTopK(r, m, "num_experts");
  c.moe = m;
}

/// DBRX: its own field names, attention and experts in sections. Fused
/// Wqkv (grouped-query, kv_n_heads) with q, k and v clamped to clip_qkv,
/// LayerNorms without bias, moe_num_experts SwiGLU experts of
/// ffn_hidden_size in every layer behind a top-k softmax router.
static void readDbrx(ConfigReader &r, ModelConfig &c) {
  c.hidden = r.integer("d_model");
  c.layers = r.layerCount("n_layers");
  c.heads = r.integer("n_heads");
  c.vocab = r.integer("vocab_size");
  c.maxPositions = r.integerOr("max_seq_len", 2048);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", false);
  c.embeddingDropout = r.probability("emb_pdrop");
  c.residualDropout = r.probability("resid_pdrop");
  ConfigReader &attn = r.section("attn_config");
  c.kvHeads = attn.integerOr("kv_n_heads", 1);
  c.attentionDropout = attn.probability("attn_pdrop");
  c.clipQKV = attn.positiveNumber("clip_qkv").has_value();
  attn.understood({"rope_theta", "model_type"});
  ConfigReader &ffn = r.section("ffn_config");
  MoEConfig m;
  m.experts = ffn.integerOr("moe_num_experts", 4);
  m.topK = ffn.integerOr("moe_top_k", 1);
  m.expertFfn = ffn.integerOr("ffn_hidden_size", 3584);
  // Routing's numerics and the load-balancing loss: no change in cost.
  ffn.understood({"moe_jitter_eps", "moe_loss_weight",
                  "moe_normalize_expert_weights", "uniform_expert_assignment",
                  "model_type"});
  std::string act = ffn.section("ffn_act_fn").string("name", "silu");
  if (!r.ok())
    return;
  if (act != "silu")
    r.error() << "field 'ffn_config.ffn_act_fn.name' is '" << act
              << "'; DBRX's experts are SwiGLU ('silu')";
  r.requireDivides("n_heads", c.heads, "d_model", c.hidden);
  r.requireDivides("attn_config.kv_n_heads", c.kvHeads, "n_heads", c.heads);
  requireTopK(r, m, "ffn_config.moe_num_experts");
  if (!r.ok())
    return;
  c.headDim = c.hidden / c.heads;
  c.ffn = m.expertFfn;
  c.norm = NormStyle::Layer;
  c.normBias = false;
  c.activation = Activation::SiLU;
  c.gatedMlp = true;
  c.fusedQKV = true;
  m.scoring = RouterScoring::Softmax;
  c.moe = m;
}

/// Granite-MoE: Llama's attention and num_local_experts SwiGLU experts
/// (input_linear, output_linear) in every layer behind a top-k softmax
/// router, with Granite's scalings: embeddings times embedding_multiplier,
/// each block's output times residual_multiplier, logits over
/// logits_scaling (attention_multiplier replaces the score scale: no cost).
static void readGraniteMoe(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false, /*tiedByDefault=*/true);
  auto scales = [&](StringRef key) {
    std::optional<double> v = r.positiveNumber(key);
    return v && *v != 1;
  };
  c.scaleEmbeddings = scales("embedding_multiplier");
  c.scaleResiduals = scales("residual_multiplier");
  c.scaleLogits = scales("logits_scaling");
  r.understood({"attention_multiplier"});
  readLocalExperts(r, c);
}

static void readQwen2MoE(ConfigReader &r, ModelConfig &c) {
  readQwen2(r, c);
  readQwenMoE(r, c, /*sharedExpert=*/true);
}

static void readQwen3MoE(ConfigReader &r, ModelConfig &c) {
  readQwen3(r, c);
  readQwenMoE(r, c, /*sharedExpert=*/false);
}

/// DeepSeek-V3's and GLM-4.5's multi-token-prediction module: a
/// training-time extra their published totals (671B, 106B) leave out, as
/// the importer does.
static void warnMultiTokenPrediction(ConfigReader &r) {
  if (int64_t mtp = r.countOr("num_nextn_predict_layers", 0); mtp > 0)
    emitWarning(r.location())
        << "the " << mtp
        << " multi-token-prediction layer(s) (num_nextn_predict_layers) are "
           "not built: the model is the main one, as its published total "
           "counts it";
}

/// The scoring of DeepSeek-style routers (`scoring_func`).
static RouterScoring readScoring(ConfigReader &r, StringRef def) {
  std::string scoring = r.string("scoring_func", def);
  if (r.ok() && scoring != "softmax" && scoring != "sigmoid")
    r.error() << "field 'scoring_func' is '" << scoring
              << "'; expected 'softmax' or 'sigmoid'";
  return scoring == "sigmoid" ? RouterScoring::Sigmoid : RouterScoring::Softmax;
}

/// DeepSeek's and GLM-4.5's experts, once read: n_routed_experts of them,
/// after first_k_dense_replace dense layers.
static void setRoutedExperts(ConfigReader &r, ModelConfig &c,
                             const MoEConfig &m) {
  requireTopK(r, m, "n_routed_experts");
  if (r.ok() && m.firstDenseLayers > c.layers)
    r.error() << "first_k_dense_replace (" << m.firstDenseLayers
              << ") exceeds num_hidden_layers (" << c.layers << ")";
  c.moe = m;
}

static void readDeepSeek(ConfigReader &r, ModelConfig &c, bool v3) {
  c.hidden = r.integer("hidden_size");
  c.layers = r.layerCount("num_hidden_layers");
  c.heads = r.integer("num_attention_heads");
  c.ffn = r.integer("intermediate_size");
  c.vocab = r.integer("vocab_size");
  c.maxPositions = r.integerOr("max_position_embeddings", 4096);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", false);
  warnMultiTokenPrediction(r);
  c.attention = AttentionKind::Latent;
  c.latent.qLoraRank = r.optionalInteger("q_lora_rank");
  c.latent.kvLoraRank = r.integer("kv_lora_rank");
  c.latent.qkNopeHeadDim = r.integer("qk_nope_head_dim");
  c.latent.qkRopeHeadDim = r.integer("qk_rope_head_dim");
  c.latent.vHeadDim = r.integer("v_head_dim");
  c.kvHeads = c.heads;
  c.norm = NormStyle::RMS;
  readActivation(r, c, "hidden_act", "silu");
  // num_key_value_heads is kept for compatibility: MLA has its own heads.
  // Group-limited routing (n_group, topk_group) picks experts, it does not
  // change their cost.
  r.understood({"num_key_value_heads", "n_group", "topk_group",
                "routed_scaling_factor", "norm_topk_prob", "aux_loss_alpha",
                "seq_aux", "ep_size", "attention_bias", "attention_dropout"});
  if (!r.has("n_routed_experts"))
    return; // a dense DeepSeek model
  MoEConfig m;
  m.experts = r.integer("n_routed_experts");
  m.topK = r.integer("num_experts_per_tok");
  m.expertFfn = r.integer("moe_intermediate_size");
  m.sharedExperts = r.countOr("n_shared_experts", 0);
  m.firstDenseLayers = r.countOr("first_k_dense_replace", 0);
  m.layerPeriod = r.integerOr("moe_layer_freq", 1);
  m.scoring = readScoring(r, v3 ? "sigmoid" : "softmax");
  std::string topkMethod = r.string("topk_method", v3 ? "noaux_tc" : "greedy");
  // After the check: a refused moe_layer_freq (0) reads as 0 (found by
  // fuzz-hf-config: a division by zero).
  if (!r.ok())
    return;
  m.layerPhase = m.firstDenseLayers % m.layerPeriod;
  m.routerBias = topkMethod == "noaux_tc";
  setRoutedExperts(r, c, m);
}

/// GLM-4.5 (glm4_moe): grouped-query attention with biases on q, k and v
/// (not on o), per-head q and k norms when use_qk_norm, RoPE on
/// partial_rotary_factor of each head; first_k_dense_replace dense layers,
/// then n_routed_experts SwiGLU experts behind a sigmoid router with a
/// score-correction bias, plus n_shared_experts fused into one FFN.
static void readGlm4Moe(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false);
  c.outputBias = false;
  if (r.boolean("use_qk_norm", false))
    c.qkNorm = QKNorm::PerHead;
  warnMultiTokenPrediction(r);
  MoEConfig m;
  m.experts = r.integerOr("n_routed_experts", 128);
  m.topK = r.integerOr("num_experts_per_tok", 8);
  m.expertFfn = r.integerOr("moe_intermediate_size", 1408);
  m.sharedExperts = r.countOr("n_shared_experts", 1);
  m.firstDenseLayers = r.countOr("first_k_dense_replace", 1);
  m.scoring = readScoring(r, "sigmoid");
  m.routerBias = true;
  // Group-limited routing picks experts; renormalizing and scaling the
  // top-k weights costs 2 K per token: not counted.
  r.understood({"n_group", "topk_group", "norm_topk_prob",
                "routed_scaling_factor", "topk_method"});
  if (!r.ok())
    return;
  readRotaryFraction(r, c, "partial_rotary_factor", 0.5);
  setRoutedExperts(r, c, m);
}

/// gpt-oss: attention with biases and a learned sink logit per head,
/// layers alternating a sliding window and full attention (layer_types),
/// num_local_experts SwiGLU experts with biases in every layer behind a
/// router with a bias; the SwiGLU is clamped to swiglu_limit.
static void readGptOss(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false);
  // transformers' GptOssConfig defaults attention_bias to true.
  c.qkvBias = c.outputBias = r.boolean("attention_bias", true);
  c.attentionSinks = true;
  c.slidingWindow = r.integerOr("sliding_window", 128);
  c.slidingLayers = readLayerTypes(r, c.layers, "sliding_attention");
  if (c.slidingLayers.empty()) {
    // transformers' default: even layers slide.
    for (int64_t i = 0; i < c.layers; ++i)
      c.slidingLayers.push_back(i % 2 == 0);
  }
  MoEConfig m;
  m.experts = r.integerOr("num_local_experts", 128);
  m.topK = r.integerOr("num_experts_per_tok", 4);
  m.expertFfn = c.ffn;
  m.routerLogitBias = m.expertBiases = true;
  // The original configs repeat the top-k under another name.
  int64_t alsoTopK = r.integerOr("experts_per_token", m.topK);
  std::optional<double> limit =
      r.has("swiglu_limit") ? r.positiveNumber("swiglu_limit") : 7.0;
  // The context the model was pre-trained at before YaRN stretched it.
  r.understood({"initial_context_length"});
  if (!r.ok())
    return;
  m.clampedSwiGLU = limit.has_value();
  if (alsoTopK != m.topK)
    r.error() << "experts_per_token (" << alsoTopK
              << ") and num_experts_per_tok (" << m.topK << ") disagree";
  requireTopK(r, m, "num_local_experts");
  c.moe = m;
}

/// Phi-3.5-MoE (phimoe): Mixtral's layout with biases on q, k, v and o,
/// LayerNorms with biases, and a bias on the logits (lm_head_bias).
static void readPhimoe(ConfigReader &r, ModelConfig &c) {
  readMistral(r, c);
  c.norm = NormStyle::Layer;
  c.normBias = true;
  c.headBias = r.boolean("lm_head_bias", false);
  c.residualDropout = r.probability("hidden_dropout");
  // Sparsemixer's routing noise, and the training-time jitter of the
  // MoE's input (a multiply per element, not counted).
  r.understood({"router_jitter_noise", "input_jitter_noise"});
  readLocalExperts(r, c);
}

/// Llama 4's text decoder (llama4_text): grouped-query attention whose
/// layers alternate chunked attention with RoPE and a norm of q and k
/// without weights, and, every no_rope_layer_interval-th layer, full
/// attention without RoPE whose queries are scaled by a temperature of the
/// position; num_local_experts SwiGLU experts of intermediate_size behind
/// a top-k sigmoid router plus one shared expert of the same width, every
/// interleave_moe_layer_step-th layer (or the layers moe_layers lists), and
/// dense SwiGLU layers of intermediate_size_mlp between them.
static void readLlama4Text(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false);
  MoEConfig m;
  m.expertFfn = c.ffn;
  c.ffn = r.integerOr("intermediate_size_mlp", 16384);
  if (r.boolean("use_qk_norm", true))
    c.qkNorm = QKNorm::Weightless;
  c.attentionTemperature = r.boolean("attn_temperature_tuning", true);
  // The temperature's constants; the router's noise.
  r.understood({"floor_scale", "attn_scale", "router_jitter_noise",
                "for_llm_compressor"});
  m.experts = r.integerOr("num_local_experts", 16);
  m.topK = r.integerOr("num_experts_per_tok", 1);
  m.sharedExperts = 1;
  m.scoring = RouterScoring::Sigmoid;
  int64_t step = r.integerOr("interleave_moe_layer_step", 1);
  std::vector<int64_t> moeLayers = r.integerList("moe_layers");
  // transformers' name: 1 where a layer uses RoPE.
  std::vector<int64_t> rope = r.integerList("no_rope_layers");
  int64_t interval = r.integerOr("no_rope_layer_interval", 4);
  std::optional<int64_t> chunk = r.optionalInteger("attention_chunk_size");
  if (!r.ok())
    return;
  requireTopK(r, m, "num_local_experts");
  if (rope.empty())
    for (int64_t i = 0; i < c.layers; ++i)
      rope.push_back((i + 1) % interval != 0);
  if (int64_t(rope.size()) != c.layers) {
    r.error() << "field 'no_rope_layers' lists " << rope.size()
              << " layers but num_hidden_layers is " << c.layers;
    return;
  }
  for (int64_t v : rope) {
    if (v > 1) {
      r.error() << "field 'no_rope_layers' has " << v
                << "; expected 1 (RoPE) or 0 (none) per layer";
      return;
    }
    c.positionlessLayers.push_back(v == 0);
  }
  // Chunked layers: those layer_types names so, else those with RoPE.
  c.slidingWindow = chunk;
  c.slidingLayers = readLayerTypes(r, c.layers, "chunked_attention");
  if (!r.ok())
    return;
  if (c.slidingLayers.empty())
    for (int64_t v : rope)
      c.slidingLayers.push_back(v == 1);
  if (moeLayers.empty()) {
    m.layerPeriod = step;
    m.layerPhase = step - 1;
  } else {
    for (int64_t l : moeLayers)
      if (l >= c.layers) {
        r.error() << "moe_layers lists layer " << l << " but the model has "
                  << c.layers << " layers";
        return;
      }
    for (int64_t i = 0; i < c.layers; ++i)
      if (!llvm::is_contained(moeLayers, i))
        m.denseLayers.push_back(i);
  }
  c.moe = m;
}

/// Llama 4 as released (llama4): the text decoder in text_config; the
/// vision encoder is not built.
static void readLlama4(ConfigReader &r, ModelConfig &c) {
  ConfigReader &text = r.section("text_config");
  markCostFreeFields(text);
  readLlama4Text(text, c);
  // The image tokens' ids; the text config says whether the head is tied.
  r.understood({"vision_config", "boi_token_index", "eoi_token_index",
                "image_token_index", "tie_word_embeddings"});
  if (r.ok())
    emitWarning(r.location())
        << "the vision encoder (vision_config) and its projector are not "
           "built: the model is the text decoder of text_config";
}

/// Qwen3-Next: layers of Gated DeltaNet linear attention and, every
/// full_attention_interval-th (or as layer_types says), gated attention
/// (q_proj also yields an output gate; per-head q and k norms; RoPE on
/// partial_rotary_factor of each head); Qwen2-MoE's experts with a gated
/// shared expert after each.
static void readQwen3Next(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false);
  c.qkNorm = QKNorm::PerHead;
  c.attentionOutputGate = true;
  readQwenMoE(r, c, /*sharedExpert=*/true);
  SSMConfig m;
  m.version = 3;
  m.heads = r.integerOr("linear_num_value_heads", 32);
  m.headDim = r.integerOr("linear_value_head_dim", 128);
  m.groups = r.integerOr("linear_num_key_heads", 16);
  m.state = r.integerOr("linear_key_head_dim", 128);
  m.convKernel = r.integerOr("linear_conv_kernel_dim", 4);
  // The chunk of the released kernels (flash-linear-attention's
  // chunk_gated_delta_rule); no config field sets it.
  m.chunk = 64;
  m.convBias = m.projBias = false;
  int64_t interval = r.integerOr("full_attention_interval", 4);
  std::vector<bool> linear = readLayerTypes(r, c.layers, "linear_attention");
  bool sliding = r.boolean("use_sliding_window", false);
  warnMultiTokenPrediction(r);
  if (!r.ok())
    return;
  if (sliding)
    r.error() << "field 'use_sliding_window' is true: Qwen3-Next's "
                 "attention layers attend to every key";
  readRotaryFraction(r, c, "partial_rotary_factor", 0.25);
  r.requireDivides("linear_num_key_heads", m.groups, "linear_num_value_heads",
                   m.heads);
  m.inner = r.product("linear_num_value_heads x linear_value_head_dim",
                      m.heads, m.headDim);
  if (!r.ok())
    return;
  for (int64_t i = 0; i < c.layers; ++i) {
    bool full = linear.empty() ? (i + 1) % interval == 0 : !linear[i];
    LayerKind k;
    k.mixer = full ? Mixer::Attention : Mixer::SSM;
    k.ffn = c.isMoELayer(i) ? FfnKind::MoE : FfnKind::Dense;
    c.layerKinds.push_back(k);
  }
  c.ssm = m;
}

/// Mamba's dt rank: an integer or "auto", ceil(D / 16).
static int64_t readDtRank(ConfigReader &r, StringRef key, int64_t hidden) {
  int64_t automatic = hidden / 16 + (hidden % 16 != 0);
  if (!r.isString(key))
    return r.integerOr(key, automatic);
  if (r.string(key, "auto") != "auto")
    r.error() << "field '" << key << "' must be an integer or \"auto\"";
  return automatic;
}

/// What Mamba and Mamba-2 configs share: sizes, the convolution, biases.
static SSMConfig readSSMCommon(ConfigReader &r, ModelConfig &c) {
  c.hidden = r.integer("hidden_size");
  c.layers = r.layerCount("num_hidden_layers");
  c.vocab = r.integer("vocab_size");
  c.maxPositions = r.integerOr("max_position_embeddings", 1 << 20);
  c.norm = NormStyle::RMS;
  SSMConfig m;
  m.state = r.integer("state_size");
  m.convKernel = r.integerOr("conv_kernel", 4);
  int64_t expand = r.integerOr("expand", 2);
  m.inner = r.integerOr("intermediate_size", [&] {
    return r.product("expand x hidden_size", expand, c.hidden);
  });
  m.convBias = r.boolean("use_conv_bias", true);
  m.projBias = r.boolean("use_bias", false);
  std::string act = r.string("hidden_act", "silu");
  if (r.ok() && act != "silu" && act != "swish")
    r.error() << "field 'hidden_act' is '" << act
              << "'; Mamba's mixer gates with silu";
  // Initialization and numerics of the scan: no change in cost.
  r.understood({"time_step_min", "time_step_max", "time_step_floor",
                "time_step_scale", "time_step_init_scheme", "time_step_limit",
                "rescale_prenorm_residual", "residual_in_fp32", "use_mambapy",
                "use_cache", "norm_before_gate", "rms_norm",
                "pad_vocab_size_multiple", "layer_norm_epsilon"});
  return m;
}

static void readMamba(ConfigReader &r, ModelConfig &c) {
  SSMConfig m = readSSMCommon(r, c);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", true);
  m.version = 1;
  m.dtRank = readDtRank(r, "time_step_rank", c.hidden);
  c.ssm = m;
}

/// Falcon-Mamba: Mamba with RMS norms of dt, B and C that have no weights
/// (mixer_rms_eps is their epsilon).
static void readFalconMamba(ConfigReader &r, ModelConfig &c) {
  readMamba(r, c);
  r.understood({"mixer_rms_eps"});
  if (!r.ok())
    return;
  c.ssm->innerNorms = true;
  c.ssm->innerNormWeights = false;
}

static void readMamba2(ConfigReader &r, ModelConfig &c) {
  SSMConfig m = readSSMCommon(r, c);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", false);
  m.version = 2;
  m.heads = r.integer("num_heads");
  m.headDim = r.integerOr("head_dim", 64);
  m.groups = r.integerOr("n_groups", 1);
  m.chunk = r.integerOr("chunk_size", 256);
  // Mamba-2 has no low-rank dt projection.
  r.understood({"time_step_rank"});
  int64_t channels = r.product("num_heads x head_dim", m.heads, m.headDim);
  if (r.ok() && channels != m.inner)
    r.error() << "num_heads x head_dim (" << m.heads << " x " << m.headDim
              << ") must equal the mixer's channels, expand x hidden_size = "
              << m.inner;
  r.requireDivides("n_groups", m.groups, "num_heads", m.heads);
  c.ssm = m;
}

/// Jamba: Mamba mixers with inner norms, attention every attn_layer_period
/// layers from attn_layer_offset, MoE every expert_layer_period layers from
/// expert_layer_offset; no positional encoding.
static void readJamba(ConfigReader &r, ModelConfig &c) {
  readDecoder(r, c, false);
  c.rotary = false;
  readSlidingWindow(r, c);
  SSMConfig m;
  m.version = 1;
  m.state = r.integerOr("mamba_d_state", 16);
  m.convKernel = r.integerOr("mamba_d_conv", 4);
  m.inner = r.product("mamba_expand x hidden_size",
                      r.integerOr("mamba_expand", 2), c.hidden);
  m.dtRank = readDtRank(r, "mamba_dt_rank", c.hidden);
  m.convBias = r.boolean("mamba_conv_bias", true);
  m.projBias = r.boolean("mamba_proj_bias", false);
  m.innerNorms = r.boolean("mamba_inner_layernorms", true);
  int64_t attnPeriod = r.integerOr("attn_layer_period", 8);
  int64_t attnOffset = r.countOr("attn_layer_offset", 4);
  int64_t expertPeriod = r.integerOr("expert_layer_period", 2);
  int64_t expertOffset = r.countOr("expert_layer_offset", 1);
  MoEConfig e;
  e.experts = r.integerOr("num_experts", 16);
  e.topK = r.integerOr("num_experts_per_tok", 2);
  e.expertFfn = c.ffn;
  r.understood({"use_mamba_kernels", "num_logits_to_keep"});
  requireTopK(r, e, "num_experts");
  if (!r.ok())
    return;
  if (attnOffset >= attnPeriod || expertOffset >= expertPeriod)
    r.error() << "the layer offsets (attn_layer_offset " << attnOffset
              << ", expert_layer_offset " << expertOffset
              << ") must be below their periods (" << attnPeriod << ", "
              << expertPeriod << ")";
  c.ssm = m;
  bool experts = e.experts > 1;
  if (experts)
    c.moe = e;
  for (int64_t i = 0; i < c.layers; ++i) {
    LayerKind k;
    k.mixer = i % attnPeriod == attnOffset ? Mixer::Attention : Mixer::SSM;
    k.ffn = experts && i % expertPeriod == expertOffset ? FfnKind::MoE
                                                        : FfnKind::Dense;
    c.layerKinds.push_back(k);
  }
}

/// Nemotron-H: one block per layer as hybrid_override_pattern spells it:
/// `M` a Mamba-2 mixer, `*` attention, `-` a ReLU^2 MLP.
static void readNemotronH(ConfigReader &r, ModelConfig &c) {
  readSizes(r, c, 8192);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", false);
  c.qkvBias = c.outputBias = r.boolean("attention_bias", false);
  c.mlpBias = r.boolean("mlp_bias", false);
  c.attentionDropout = r.probability("attention_dropout");
  // heads is positive once read (0 only after an error, reported).
  int64_t perHead = c.heads ? c.hidden / c.heads : 0;
  c.headDim = r.has("head_dim") ? r.integer("head_dim")
                                : r.integerOr("attention_head_dim", perHead);
  c.norm = NormStyle::RMS;
  c.gatedMlp = false;
  c.rotary = false;
  readActivation(r, c, "mlp_hidden_act", "relu2");
  SSMConfig m;
  m.version = 2;
  m.heads = r.integer("mamba_num_heads");
  m.headDim = r.integerOr("mamba_head_dim", 64);
  m.inner = r.product("mamba_num_heads x mamba_head_dim", m.heads, m.headDim);
  m.state = r.integer("ssm_state_size");
  m.groups = r.integerOr("n_groups", 1);
  m.convKernel = r.integerOr("conv_kernel", 4);
  m.chunk = r.integerOr("chunk_size", 256);
  m.convBias = r.boolean("use_conv_bias", true);
  m.projBias = r.boolean("use_bias", false);
  r.understood({"expand", "mamba_hidden_act", "mamba_proj_bias",
                "time_step_min", "time_step_max", "time_step_floor",
                "time_step_limit", "rescale_prenorm_residual",
                "residual_in_fp32", "layer_norm_epsilon", "num_logits_to_keep",
                "mamba_chunk_size"});
  std::string pattern = r.string("hybrid_override_pattern", "");
  if (!r.ok())
    return;
  r.requireDivides("n_groups", m.groups, "mamba_num_heads", m.heads);
  if (int64_t(pattern.size()) != c.layers) {
    r.error() << "field 'hybrid_override_pattern' has " << pattern.size()
              << " layers but num_hidden_layers is " << c.layers;
    return;
  }
  for (char ch : pattern) {
    LayerKind k;
    k.mixer = ch == 'M'   ? Mixer::SSM
              : ch == '*' ? Mixer::Attention
                          : Mixer::None;
    k.ffn = ch == '-' ? FfnKind::Dense : FfnKind::None;
    if (ch != 'M' && ch != '*' && ch != '-') {
      r.error() << "field 'hybrid_override_pattern' has '" << ch
                << "'; expected 'M' (Mamba-2), '*' (attention) or '-' (MLP)";
      return;
    }
    c.layerKinds.push_back(k);
  }
  c.ssm = m;
}

/// Zamba2: Mamba-2 layers, some of which (layers_block_type "hybrid") also
/// run a transformer block shared across depth: num_mem_blocks sets of
/// weights taken in turn, each use with its own adapters and `linear`.
static void readZamba2(ConfigReader &r, ModelConfig &c) {
  c.hidden = r.integer("hidden_size");
  c.layers = r.layerCount("num_hidden_layers");
  c.vocab = r.integer("vocab_size");
  c.maxPositions = r.integerOr("max_position_embeddings", 4096);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", true);
  c.norm = NormStyle::RMS;
  c.heads = r.integer("num_attention_heads");
  c.kvHeads = r.integerOr("num_key_value_heads", c.heads);
  c.ffn = r.integerOr("intermediate_size", [&] {
    return r.product("4 x hidden_size", 4, c.hidden);
  });
  c.gatedMlp = true;
  readActivation(r, c, "hidden_act", "gelu");
  c.attentionDropout = r.probability("attention_dropout");
  SSMConfig m;
  m.version = 2;
  m.state = r.integerOr("mamba_d_state", 64);
  m.convKernel = r.integerOr("mamba_d_conv", 4);
  m.inner = r.product("mamba_expand x hidden_size",
                      r.integerOr("mamba_expand", 2), c.hidden);
  m.groups = r.integerOr("mamba_ngroups", 1);
  m.heads = r.integerOr("n_mamba_heads", 8);
  m.headDim = r.integerOr("mamba_headdim", [&] {
    return m.heads ? m.inner / m.heads : 0;
  });
  m.chunk = r.integerOr("chunk_size", 256);
  m.convBias = r.boolean("use_conv_bias", true);
  m.projBias = r.boolean("add_bias_linear", false);
  SharedBlockConfig s;
  s.blocks = r.integerOr("num_mem_blocks", 1);
  s.adapterRank = r.integerOr("adapter_rank", 128);
  s.attentionAdapters = r.boolean("use_shared_attention_adapter", false);
  s.rotary = r.boolean("use_mem_rope", false);
  // The MLP's adapters are built whatever use_shared_mlp_adapter says (as
  // HF's Zamba2MLP does); attention_head_dim, attention_hidden_size,
  // kv_channels and num_query_groups are derived from the sizes above.
  r.understood({"use_shared_mlp_adapter", "time_step_min", "time_step_max",
                "time_step_floor", "time_step_limit", "use_long_context",
                "num_logits_to_keep", "use_mem_eff_path", "kv_channels",
                "num_query_groups", "ffn_hidden_size"});
  std::vector<std::string> types = r.stringList("layers_block_type");
  std::vector<int64_t> listed = r.integerList("hybrid_layer_ids");
  std::optional<int64_t> headDim = r.optionalInteger("attention_head_dim");
  std::optional<int64_t> width = r.optionalInteger("attention_hidden_size");
  if (!r.ok())
    return;
  r.requireDivides("num_attention_heads", c.heads, "2 x hidden_size",
                   2 * c.hidden);
  r.requireDivides("num_key_value_heads", c.kvHeads, "num_attention_heads",
                   c.heads);
  r.requireDivides("mamba_ngroups", m.groups, "n_mamba_heads", m.heads);
  if (!r.ok())
    return;
  c.headDim = 2 * c.hidden / c.heads;
  if (headDim && *headDim != c.headDim)
    r.error() << "field 'attention_head_dim' is " << *headDim
              << " but the shared attention's heads are 2 x hidden_size / "
                 "num_attention_heads = "
              << c.headDim << " channels";
  if (width && *width != 2 * c.hidden)
    r.error() << "field 'attention_hidden_size' is " << *width
              << " but the shared blocks read 2 x hidden_size = "
              << 2 * c.hidden << " channels";
  if (r.ok() && m.heads * m.headDim != m.inner)
    r.error() << "n_mamba_heads x mamba_headdim (" << m.heads << " x "
              << m.headDim << ") must equal the mixer's channels, "
              << "mamba_expand x hidden_size = " << m.inner;
  if (r.ok() && s.attentionAdapters && c.kvHeads != c.heads)
    r.error() << "use_shared_attention_adapter adds adapters of "
                 "2 x hidden_size channels to k and v: it needs "
                 "num_key_value_heads = num_attention_heads ("
              << c.heads << "), not " << c.kvHeads;
  if (!r.ok())
    return;
  if (int64_t(types.size()) != c.layers) {
    r.error() << "field 'layers_block_type' has " << types.size()
              << " layers but num_hidden_layers is " << c.layers;
    return;
  }
  for (auto [i, t] : llvm::enumerate(types)) {
    if (t == "hybrid")
      s.uses.push_back(int64_t(i));
    else if (t != "mamba") {
      r.error() << "field 'layers_block_type' has '" << t
                << "'; expected 'mamba' or 'hybrid'";
      return;
    }
  }
  if (!listed.empty() && listed != s.uses) {
    r.error() << "field 'hybrid_layer_ids' does not list the 'hybrid' layers "
                 "of layers_block_type";
    return;
  }
  c.ssm = m;
  if (!s.uses.empty())
    c.sharedBlocks = s;
}

static const HFFamily kFamilies[] = {
    {"LlamaForCausalLM", "llama", readLlama},
    {"MistralForCausalLM", "mistral", readMistral},
    {"Qwen2ForCausalLM", "qwen2", readQwen2},
    {"Qwen3ForCausalLM", "qwen3", readQwen3},
    {"Phi3ForCausalLM", "phi3", readPhi3},
    {"Olmo2ForCausalLM", "olmo2", readOlmo2},
    {"GemmaForCausalLM", "gemma", readGemma},
    {"Gemma2ForCausalLM", "gemma2", readGemma2},
    {"Gemma3ForCausalLM", "gemma3_text", readGemma3},
    {"FalconForCausalLM", "falcon", readFalcon},
    {"GPTNeoXForCausalLM", "gpt_neox", readGPTNeoX},
    {"CohereForCausalLM", "cohere", readCohere},
    {"Starcoder2ForCausalLM", "starcoder2", readStarcoder2},
    {"GPT2LMHeadModel", "gpt2", readGPT2},
    {"MixtralForCausalLM", "mixtral", readMixtral},
    {"Qwen2MoeForCausalLM", "qwen2_moe", readQwen2MoE},
    {"Qwen3MoeForCausalLM", "qwen3_moe", readQwen3MoE},
    {"OlmoeForCausalLM", "olmoe", readOlmoe},
    {"DbrxForCausalLM", "dbrx", readDbrx},
    {"GraniteMoeForCausalLM", "granitemoe", readGraniteMoe},
    {"PhimoeForCausalLM", "phimoe", readPhimoe},
    {"Glm4MoeForCausalLM", "glm4_moe", readGlm4Moe},
    {"GptOssForCausalLM", "gpt_oss", readGptOss},
    {"Llama4ForCausalLM", "llama4_text", readLlama4Text},
    {"Llama4ForConditionalGeneration", "llama4", readLlama4},
    {"Qwen3NextForCausalLM", "qwen3_next", readQwen3Next},
    {"MambaForCausalLM", "mamba", readMamba},
    {"FalconMambaForCausalLM", "falcon_mamba", readFalconMamba},
    {"Mamba2ForCausalLM", "mamba2", readMamba2},
    {"JambaForCausalLM", "jamba", readJamba},
    {"NemotronHForCausalLM", "nemotron_h", readNemotronH},
    {"Zamba2ForCausalLM", "zamba2", readZamba2},
    {"DeepseekV2ForCausalLM", "deepseek_v2",
     [](ConfigReader &r, ModelConfig &c) { readDeepSeek(r, c, false); }},
    {"DeepseekV3ForCausalLM", "deepseek_v3",
     [](ConfigReader &r, ModelConfig &c) { readDeepSeek(r, c, true); }},
};

llvm::ArrayRef<HFFamily> mlir::stage::getHFFamilies() { return kFamilies; }
