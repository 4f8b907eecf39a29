//===- HFImport.cpp - --import-hf-config ----------------------------------===//

#include "Stage/Target/HF/HFImport.h"

#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Models/TransformerBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

#include <limits>

using namespace mlir;
using namespace mlir::stage;

namespace {
struct ImportOptions {
  llvm::cl::opt<int64_t> batch{
      "batch", llvm::cl::desc("--import-hf-config: global batch in sequences (B)"),
      llvm::cl::init(8)};
  llvm::cl::opt<int64_t> seq{
      "seq",
      llvm::cl::desc("--import-hf-config: sequence length (S); default "
                     "min(max_position_embeddings, 4096)"),
      llvm::cl::init(0)};
  llvm::cl::opt<Precision> precision{
      "precision",
      llvm::cl::desc("--import-hf-config: element type of weights and "
                     "activations"),
      llvm::cl::init(Precision::BF16),
      llvm::cl::values(clEnumValN(Precision::BF16, "bf16", "bfloat16"),
                       clEnumValN(Precision::FP16, "fp16", "float16"),
                       clEnumValN(Precision::FP32, "fp32", "float32"))};
  llvm::cl::opt<AttentionImpl> attention{
      "attention",
      llvm::cl::desc("--import-hf-config: how attention is expressed"),
      llvm::cl::init(AttentionImpl::Fused),
      llvm::cl::values(
          clEnumValN(AttentionImpl::Fused, "fused",
                     "one fused (flash) attention op"),
          clEnumValN(AttentionImpl::Unfused, "unfused",
                     "Megatron's core: scores, softmax, dropout, context"))};
  llvm::cl::opt<int64_t> padVocab{
      "pad-vocab-to",
      llvm::cl::desc("--import-hf-config: round the vocabulary up to a "
                     "multiple of N (Megatron-LM pads to 128 * tp)"),
      llvm::cl::init(1)};
  llvm::cl::opt<GraphKind> graph{
      "graph", llvm::cl::desc("--import-hf-config: what the graph spans"),
      llvm::cl::init(GraphKind::Model),
      llvm::cl::values(
          clEnumValN(GraphKind::Model, "model", "tokens to loss (@forward)"),
          clEnumValN(GraphKind::Layer, "layer",
                     "one decoder layer, x -> y (@layer), to compare with "
                     "an exported block"))};
  llvm::cl::opt<int64_t> maxLayers{
      "max-layers",
      llvm::cl::desc("--import-hf-config: refuse a config of more layers "
                     "(the importer lists each layer's kind)"),
      llvm::cl::init(kDefaultMaxImportedLayers)};
  llvm::cl::opt<bool> allowUnreadFields{
      "allow-unread-fields",
      llvm::cl::desc("--import-hf-config: build the model without the "
                     "config's fields that may size something and that its "
                     "family's importer does not read (a warning each; "
                     "without it, an error)"),
      llvm::cl::init(false)};
  llvm::cl::opt<bool> dropout{
      "dropout",
      llvm::cl::desc("--import-hf-config: the config's dropout ops "
                     "(--dropout=false: none)"),
      llvm::cl::init(true)};
};
} // namespace

static ImportOptions &importOptions() {
  static ImportOptions options;
  return options;
}

static OwningOpRef<Operation *> importConfig(llvm::SourceMgr &sourceMgr,
                                             MLIRContext *ctx) {
  const llvm::MemoryBuffer *buf =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  Location loc = FileLineColLoc::get(ctx, buf->getBufferIdentifier(), 1, 1);
  const ImportOptions &o = importOptions();
  FailureOr<ModelConfig> config =
      parseHFConfig(buf->getBuffer(), loc, o.maxLayers, o.allowUnreadFields);
  if (failed(config))
    return {};
  BuildOptions build;
  build.batch = o.batch;
  build.seq = o.seq ? int64_t(o.seq) : std::min<int64_t>(config->maxPositions, 4096);
  build.precision = o.precision;
  build.attention = o.attention;
  build.dropout = o.dropout;
  build.graph = o.graph;
  if (o.padVocab < 1) {
    emitError(loc) << "--pad-vocab-to=" << int64_t(o.padVocab)
                   << " is not positive";
    return {};
  }
  int64_t missing = (o.padVocab - config->vocab % o.padVocab) % o.padVocab;
  if (config->vocab > std::numeric_limits<int64_t>::max() - missing) {
    emitError(loc) << "vocab_size (" << config->vocab
                   << ") padded to a multiple of " << int64_t(o.padVocab)
                   << " does not fit in 64 bits";
    return {};
  }
  config->vocab += missing;
  if (build.batch <= 0 || build.seq <= 0) {
    emitError(loc) << "--batch and --seq must be positive";
    return {};
  }
  if (config->learnedPositions && build.seq > config->maxPositions) {
    emitError(loc) << "--seq=" << build.seq << " exceeds the "
                   << config->maxPositions
                   << " learned positions of the model";
    return {};
  }
  if (build.seq > config->maxPositions)
    emitWarning(loc) << "--seq=" << build.seq
                     << " exceeds the model's max_position_embeddings ("
                     << config->maxPositions
                     << "): the costs are those of a model stretched beyond "
                        "its trained context";
  OwningOpRef<ModuleOp> module = buildTransformer(ctx, loc, *config, build);
  if (!module)
    return {};
  return OwningOpRef<Operation *>(module.release());
}

void mlir::stage::registerHFImportTranslation() {
  (void)importOptions();
  TranslateToMLIRRegistration reg(
      "import-hf-config",
      "HuggingFace config.json to the symbolic training forward graph "
      "(supported architectures: README, docs/Models.md)",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *ctx) {
        return importConfig(sourceMgr, ctx);
      },
      [](DialectRegistry &registry) {
        registry.insert<StageDialect, func::FuncDialect>();
      });
}
