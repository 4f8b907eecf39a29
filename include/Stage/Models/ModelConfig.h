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

namespace mlir::stage {

enum class AttentionKind {
  Grouped, // multi-head / grouped-query attention with q, k, v projections
  Latent,  // multi-head latent attention (DeepSeek-V2/V3)
};

enum class ActivationKind {
  SwiGLU, // silu(gate) * up, then down
  GeLU,   // gelu(up), then down
};

enum class NormStyle { RMS, Layer };

enum class RouterScoring { Softmax, Sigmoid };

struct MoEConfig {
  int64_t experts = 0;       // routed experts (E)
  int64_t topK = 0;          // experts per token (K)
  int64_t expertFfn = 0;     // intermediate size of one expert (Fe)
  int64_t sharedExperts = 0; // always-active experts, fused into one FFN
  RouterScoring scoring = RouterScoring::Softmax;
  bool routerBias = false;   // DeepSeek-V3's e_score_correction_bias
  int64_t firstDenseLayers = 0;
  int64_t layerFrequency = 1; // every n-th layer after the dense ones is MoE
};

struct LatentAttentionConfig {
  std::optional<int64_t> qLoraRank; // null: q is projected directly
  int64_t kvLoraRank = 0;
  int64_t qkNopeHeadDim = 0;
  int64_t qkRopeHeadDim = 0;
  int64_t vHeadDim = 0;
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
  bool learnedPositions = false; // GPT: a position table added to tokens
  bool qkvBias = false;
  bool outputBias = false;
  bool mlpBias = false;
  bool normBias = false; // LayerNorm with a bias
  NormStyle norm = NormStyle::RMS;
  ActivationKind activation = ActivationKind::SwiGLU;
  AttentionKind attention = AttentionKind::Grouped;
  LatentAttentionConfig latent;
  /// Dropout probabilities (GPT-2's embd_pdrop, attn_pdrop, resid_pdrop;
  /// Llama's attention_dropout); 0 means no dropout op.
  double embeddingDropout = 0, attentionDropout = 0, residualDropout = 0;
  std::optional<MoEConfig> moe;

  /// Whether layer `i` (0-based) is a mixture-of-experts layer.
  bool isMoELayer(int64_t i) const {
    return moe && i >= moe->firstDenseLayers &&
           (i - moe->firstDenseLayers) % moe->layerFrequency == 0;
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
