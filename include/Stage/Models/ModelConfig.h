//===- ModelConfig.h - Decoder-only transformer configurations --*- C++ -*-===//
//
// Everything about a model that changes its FLOPs, bytes or parameter count,
// independent of where it came from (a HuggingFace config, a preset).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_MODELS_MODELCONFIG_H
#define STAGE_MODELS_MODELCONFIG_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::stage {

enum class AttentionKind {
  Grouped, // multi-head / grouped-query attention with q, k, v projections
  Latent,  // multi-head latent attention (DeepSeek-V2/V3)
};

/// The MLP's nonlinearity (`hidden_act`). A gated MLP applies it to the
/// gate and multiplies by the up projection: SiLU gives SwiGLU, GeLU GeGLU.
enum class Activation {
  SiLU,
  GeLU,
  ReLU,
  ReLUSquared, // relu(x)^2 (Primer, Nemotron)
};

enum class NormStyle { RMS, Layer };

/// Where a layer's norms sit.
enum class NormPlacement {
  Pre,      // before attention and before the MLP (Llama, GPT)
  Sandwich, // before and after each block (Gemma-2/3: four norms)
  Post,     // after each block, before its residual add (OLMo-2)
  Parallel, // attention and MLP read the normed input; both are added
            // to the residual (Falcon, GPT-J); one norm or one per block
};

/// Norms of the queries and keys before RoPE.
enum class QKNorm {
  None,
  PerHead,  // over each head's Dh channels, one weight of Dh (Qwen3, Gemma-3)
  AllHeads, // a weight of H*Dh (KV*Dh) channels (OLMo-2, Command-R+)
  Weightless, // over each head's Dh channels, no weight (Llama 4's L2 norm)
};

enum class RouterScoring { Softmax, Sigmoid };

struct MoEConfig {
  int64_t experts = 0;       // routed experts (E)
  int64_t topK = 0;          // experts per token (K)
  int64_t expertFfn = 0;     // intermediate size of one expert (Fe)
  int64_t sharedExperts = 0; // always-active experts, fused into one FFN
  RouterScoring scoring = RouterScoring::Softmax;
  bool routerBias = false;   // DeepSeek-V3's e_score_correction_bias
  /// Width of the shared experts' one FFN; 0: sharedExperts * expertFfn.
  int64_t sharedFfn = 0;
  /// Qwen2-MoE: the shared expert's output scaled by sigmoid(x w), w: [D].
  bool sharedExpertGate = false;
  /// gpt-oss: a bias on the router's logits and on each expert's
  /// projections (gate and up [E, Fe], down [E, D]).
  bool routerLogitBias = false, expertBiases = false;
  /// gpt-oss's clamped SwiGLU: the gate clamped from above and scaled,
  /// the up projection clamped on both sides and offset by one.
  bool clampedSwiGLU = false;
  int64_t firstDenseLayers = 0;
  /// Layer i (not among the first dense ones nor in denseLayers) is MoE
  /// when i % layerPeriod == layerPhase.
  int64_t layerPeriod = 1, layerPhase = 0;
  std::vector<int64_t> denseLayers; // Qwen's mlp_only_layers

  int64_t sharedWidth() const {
    return sharedFfn ? sharedFfn : sharedExperts * expertFfn;
  }
};

/// A Mamba (selective scan), Mamba-2 (SSD) or Gated DeltaNet (delta rule)
/// mixer. Gated DeltaNet's heads are its value heads (Hm of P channels),
/// its groups the key heads (G of N channels, shared by Hm / G value
/// heads), its state N x P per value head.
struct SSMConfig {
  int version = 1;        // 1: Mamba, 2: Mamba-2, 3: Gated DeltaNet
  int64_t inner = 0;      // Di: expand * D channels
  int64_t state = 0;      // N: state per channel (d_state)
  int64_t convKernel = 4; // Kc: taps of the causal convolution
  int64_t dtRank = 0;     // R: Mamba's low-rank dt projection
  int64_t heads = 0;      // Hm: Mamba-2 heads of P channels each
  int64_t headDim = 0;    // P
  int64_t groups = 1;     // G: Mamba-2 groups sharing B and C
  int64_t chunk = 256;    // Q: Mamba-2's SSD chunk
  bool convBias = true, projBias = false;
  bool innerNorms = false; // Jamba: RMS norms of dt, B and C
  bool innerNormWeights = true; // false: Falcon-Mamba's, without weights
};

/// Zamba2's shared transformer blocks: `blocks` sets of attention and MLP
/// weights that the layers in `uses` take in turn (use j runs block
/// j % blocks). A use reads its layer's input joined with the token
/// embeddings (2 D channels), normed; attention of H heads of Dh = 2 D / H
/// channels back to D; a norm and a gated MLP of F; then its own D x D
/// `linear`. The result joins the input of the layer's Mamba-2 mixer only
/// (not the residual stream). Each use has low-rank adapters of rank
/// `adapterRank` on the MLP's gate and up projections and, with
/// `attentionAdapters`, on q, k and v.
struct SharedBlockConfig {
  int64_t blocks = 1;
  std::vector<int64_t> uses; // layer indices, increasing
  int64_t adapterRank = 0;
  bool attentionAdapters = false;
  bool rotary = false; // RoPE in the shared attention (use_mem_rope)

  /// Which use of the blocks layer `i` is (-1: none).
  int64_t useAt(int64_t i) const;
};

struct LatentAttentionConfig {
  std::optional<int64_t> qLoraRank; // null: q is projected directly
  int64_t kvLoraRank = 0;
  int64_t qkNopeHeadDim = 0;
  int64_t qkRopeHeadDim = 0;
  int64_t vHeadDim = 0;
};

/// What mixes tokens in a layer.
enum class Mixer { Attention, SSM, None };
/// What follows the mixer.
enum class FfnKind { Dense, MoE, None };

/// What distinguishes one decoder layer from another: layers of one kind
/// share one `stage.repeat` body.
struct LayerKind {
  Mixer mixer = Mixer::Attention;
  FfnKind ffn = FfnKind::Dense;
  bool sliding = false;
  /// Attention without positional encoding (Llama 4's NoPE layers).
  bool positionless = false;
  bool operator==(const LayerKind &o) const {
    return mixer == o.mixer && ffn == o.ffn && sliding == o.sliding &&
           positionless == o.positionless;
  }
  bool operator!=(const LayerKind &o) const { return !(*this == o); }
};

struct ModelConfig {
  std::string architecture; // e.g. "LlamaForCausalLM"
  int64_t hidden = 0;       // D
  int64_t layers = 0;       // L
  int64_t heads = 0;        // H
  int64_t kvHeads = 0;      // KV (grouped attention)
  int64_t headDim = 0;      // Dh (grouped attention)
  int64_t ffn = 0;          // F, dense layers
  int64_t vocab = 0;        // V
  int64_t maxPositions = 0; // P
  bool tiedEmbeddings = false;
  bool headBias = false;         // a bias on the logits (Phi-3.5-MoE's lm_head)
  bool learnedPositions = false; // GPT: a position table added to tokens
  bool rotary = true;            // RoPE on q and k (Jamba's attention has none)
  /// The channels of a head RoPE rotates (0: all Dh); the rest pass
  /// through (GPT-NeoX's rotary_pct, partial_rotary_factor).
  int64_t rotaryDim = 0;
  bool qkvBias = false;
  /// gpt-oss's attention sinks: a learned logit per head that joins each
  /// row's softmax (weights of H; the output rescaled by its share).
  bool attentionSinks = false;
  /// Qwen3-Next's gated attention: q_proj also yields a gate per head and
  /// channel, and the attention's output is multiplied by its sigmoid.
  bool attentionOutputGate = false;
  /// q, k and v clamped to [-clip, clip] after their projections (OLMoE's
  /// and DBRX's clip_qkv): a min and a max per element.
  bool clipQKV = false;
  bool outputBias = false;
  bool mlpBias = false;
  bool normBias = false; // LayerNorm with a bias
  NormStyle norm = NormStyle::RMS;
  NormPlacement normPlacement = NormPlacement::Pre;
  int64_t parallelNorms = 1; // NormPlacement::Parallel: one or two norms
  QKNorm qkNorm = QKNorm::None;
  Activation activation = Activation::SiLU;
  bool gatedMlp = true;
  /// Phi-3's qkv_proj and gate_up_proj, Falcon's query_key_value: one
  /// checkpoint tensor, built as its parts (the names say so).
  bool fusedQKV = false, fusedGateUp = false;
  /// Keys per query of sliding-window layers (Mistral's sliding_window).
  std::optional<int64_t> slidingWindow;
  /// Which layers slide; empty: all of them (when slidingWindow is set).
  /// Llama 4's chunked attention (each query attends within its chunk of
  /// C positions) is a window of C: the same score count in a prefill of
  /// whole chunks (S/C blocks of C x C), and in decode at most C keys.
  std::vector<bool> slidingLayers;
  /// Llama 4: the layers that attend without RoPE (and without the q and k
  /// norm); empty: none. With attentionTemperature their queries are scaled
  /// by a factor of the position (one multiply per element).
  std::vector<bool> positionlessLayers;
  bool attentionTemperature = false;
  /// Gemma-2's tanh soft-capping of attention scores and final logits.
  std::optional<double> attentionSoftcap, logitSoftcap;
  bool scaleEmbeddings = false; // Gemma: embeddings times sqrt(D)
  bool scaleLogits = false;     // Command-R: logits times logit_scale
  bool scaleResiduals = false;  // Granite: each block's output times a factor
  AttentionKind attention = AttentionKind::Grouped;
  LatentAttentionConfig latent;
  /// Dropout probabilities (GPT-2's embd_pdrop, attn_pdrop, resid_pdrop;
  /// Llama's attention_dropout); 0 means no dropout op.
  double embeddingDropout = 0, attentionDropout = 0, residualDropout = 0;
  std::optional<MoEConfig> moe;
  std::optional<SSMConfig> ssm;
  /// Zamba2: transformer blocks shared across depth (heads, kvHeads,
  /// headDim, ffn and activation describe them).
  std::optional<SharedBlockConfig> sharedBlocks;
  /// Hybrids (Jamba, Nemotron-H): each layer's mixer and MLP, read from the
  /// config; empty: attention and an MLP (MoE by isMoELayer) everywhere,
  /// or the SSM mixer alone when `ssm` is set.
  std::vector<LayerKind> layerKinds;

  /// Whether layer `i` (0-based) is a mixture-of-experts layer.
  bool isMoELayer(int64_t i) const;
  /// Whether layer `i` attends over a sliding window.
  bool isSlidingLayer(int64_t i) const {
    return slidingWindow &&
           (slidingLayers.empty() ||
            (i < int64_t(slidingLayers.size()) && slidingLayers[i]));
  }
};

enum class Precision { BF16, FP16, FP32 };

/// How attention is expressed: one fused op (flash attention, what
/// training frameworks run) or Megatron's unfused core, whose score matrix
/// is materialized (scores, softmax, dropout, context, each an op).
enum class AttentionImpl { Fused, Unfused };

/// What the imported graph spans.
enum class GraphKind {
  Model, // tokens to loss
  Layer, // one decoder layer, hidden states in and out (x -> y)
};

/// How the imported training graph is instantiated.
struct BuildOptions {
  GraphKind graph = GraphKind::Model;
  int64_t batch = 8;   // B: sequences per iteration (global batch)
  int64_t seq = 0;     // S: 0 = min(max_position_embeddings, 4096)
  Precision precision = Precision::BF16;
  AttentionImpl attention = AttentionImpl::Fused;
  bool dropout = true; // the config's dropout ops (off: none)
};

} // namespace mlir::stage

#endif // STAGE_MODELS_MODELCONFIG_H
