//===- StageAnnotations.h - The dialect's discardable attributes -*- C++
//-*-===//
//
// What the frontends and the passes write on ops they do not own: the
// module's bindings, the shardings stage-shard plans and stage-partition
// consumes, the recomputation marks, the vocabulary-parallel loss's axes,
// the frontends' names. They are declared in StageBase.td
// (`discardableAttrs`) and checked by the dialect's attribute verifiers;
// everything reads and writes them through these accessors.
//
// Shardings: results carry theirs in `stage.sharding` (one per result),
// block arguments in `stage.arg_sharding` on the op owning the region (one
// list per region), every op the shardings it needs of its operands in
// `stage.operand_sharding`, and `stage.natural_sharding` is what an op
// produces when that differs from what its results keep (a pending partial
// sum, for instance).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_DIALECT_STAGE_IR_STAGEANNOTATIONS_H
#define STAGE_DIALECT_STAGE_IR_STAGEANNOTATIONS_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <array>

namespace mlir::stage {

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

/// The module's `stage.bindings` with `overrides` applied on top. Emits an
/// error at the module and fails on a binding that is not an integer.
FailureOr<sym::Bindings> getModuleBindings(ModuleOp module,
                                           const sym::Bindings &overrides = {});
/// Sets the module's `stage.bindings` to `b` (sorted by name).
void setModuleBindings(ModuleOp module, const sym::Bindings &b);

/// Records what the model is (`stage.model = {architecture = ...}`)
/// and the positions it was trained for (`context`, the config's
/// max_position_embeddings).
void setModelInfo(ModuleOp module, StringRef architecture,
                  int64_t contextLength);
/// The model's context length, if the module records it.
std::optional<int64_t> getModelContextLength(ModuleOp module);

/// The module's sharding-rule overrides (`stage.sharding_rules`), if any.
DictionaryAttr getShardingRules(ModuleOp module);
/// The name of that attribute, for messages.
StringRef getShardingRulesAttrName();

/// The module's grid, the one the plan passes create.
GridOp getGrid(ModuleOp module);

/// The symbol of a serving program's cached KV heads when tp exceeds the
/// model's KV heads (stage-serve): `KVr = tp` heads, head h a copy of KV
/// head floor(h KV / KVr).
inline constexpr llvm::StringLiteral kReplicatedKVHeads = "KVr";

/// The rank groups of disaggregated serving (stage-disaggregate): the
/// nested modules `@prefill` and `@decode`, whose ranks come in that order.
struct ServingGroups {
  ModuleOp prefill, decode;
  /// Both, in rank order, with their names.
  std::array<std::pair<StringRef, ModuleOp>, 2> named() const {
    return {{{kPrefillGroup, prefill}, {kDecodeGroup, decode}}};
  }
  static constexpr llvm::StringLiteral kPrefillGroup = "prefill",
                                       kDecodeGroup = "decode";
};
/// The groups of `module`, if it holds them.
std::optional<ServingGroups> getServingGroups(ModuleOp module);

//===----------------------------------------------------------------------===//
// Shardings
//===----------------------------------------------------------------------===//

/// The sharding of a result or block argument; null when unannotated.
ShardingAttr getSharding(Value v);
void setResultShardings(Operation *op, ArrayRef<ShardingAttr> shardings);
void setArgShardings(Operation *op, unsigned region,
                     ArrayRef<ShardingAttr> shardings);
/// What `op` needs of operand `i`; null when unannotated.
ShardingAttr getOperandSharding(Operation *op, unsigned i);
void setOperandShardings(Operation *op, ArrayRef<ShardingAttr> shardings);
/// What `op` produces as result `i` before its results are resharded.
ShardingAttr getNaturalSharding(Operation *op, unsigned i);
/// Records what `op` produces when it differs from what its results keep
/// (`kept`); removes the record otherwise.
void setNaturalShardings(Operation *op, ArrayRef<ShardingAttr> natural,
                         ArrayRef<ShardingAttr> kept);
bool hasNaturalShardings(Operation *op);
void removeNaturalShardings(Operation *op);
/// Whether `op` carries the annotations stage-partition consumes.
bool hasShardingAnnotations(Operation *op);

/// The shape one rank holds: every dimension divided by the sizes of the
/// axes that split it.
SymTensorType getLocalType(SymTensorType global, ShardingAttr sharding);

/// Removes every sharding annotation under `root`.
void clearShardings(Operation *root);

/// The sharding a frontend's plan gives the result of `op` (an op of one
/// result); stage-shard keeps it. Null when the plan says nothing.
ShardingAttr getPlanSharding(Operation *op);
bool hasPlanSharding(Operation *op);
void setPlanSharding(Operation *op, ShardingAttr sharding);

/// On the op computing a result of a trained program without a loss (a
/// layer imported alone): the value goes on to the rest of the model, so it
/// is stored as the plan lays out activations, not left a partial sum.
bool isProgramOutput(Operation *op);
void markProgramOutput(Operation *op);

/// On a cross_entropy whose logits are a shard of the vocabulary: the grid
/// axes that split it (set by stage-partition); empty otherwise.
ArrayAttr getVocabParallelAxes(Operation *op);
void setVocabParallelAxes(Operation *op, ArrayRef<std::string> axes);

//===----------------------------------------------------------------------===//
// Recomputation
//===----------------------------------------------------------------------===//

/// `stage-recompute` marks forward ops whose results the backward
/// recomputes instead of keeping.
bool isRecomputable(Operation *op);
void markRecomputable(Operation *op);
/// On a recomputable op whose result leaves the recomputed region: the
/// result is stored all the same (Megatron's checkpoint stores the region's
/// outputs as the next op's inputs), the op is still re-run.
bool keepsRecomputedResult(Operation *op);
void markKeepsRecomputedResult(Operation *op);
/// Removes both marks (from the copy autodiff makes of a forward op).
void clearRecomputeMarks(Operation *op);
/// The copies autodiff makes in the backward of recomputable ops.
bool isRecomputation(Operation *op);
void markRecomputation(Operation *op);
/// The ops of an unfused attention core, which an importer marks so that
/// selective recomputation finds them.
/// A pipeline's sampled token sent back to its first stage (serving).
bool isTokenFeedback(Operation *op);
void markTokenFeedback(Operation *op);
bool isAttentionCore(Operation *op);
/// The layers one iteration of a layer stack stands for: a hybrid's period
/// (Gemma-2's sliding and global pair, Jamba's eight layers); 1 by default.
int64_t getLayerPeriod(RepeatOp op);
void setLayerPeriod(RepeatOp op, int64_t layers);
/// The model layer an op outside any layer stack belongs to (Zamba2's
/// layers with a shared block); none for the ops before and after layers.
std::optional<int64_t> getModelLayer(Operation *op);
void setModelLayer(Operation *op, int64_t layer);
/// The pipeline stages (their indices) holding a weight that several hold,
/// each a copy whose gradients are summed; empty for a weight one holds.
ArrayRef<int64_t> getHoldingStages(ParamOp op);
void setHoldingStages(ParamOp op, ArrayRef<int64_t> stages);
void markAttentionCore(Operation *op);

//===----------------------------------------------------------------------===//
// Overlap of communication with compute
//===----------------------------------------------------------------------===//

/// What a training step's traces overlap (stage-train's `overlap=`):
/// `grad`, the data-parallel gradient reductions issued during the backward
/// as their buckets fill; `tp`, one chain of collectives per communicator
/// group rather than per rank, so that tensor-, context- and expert-parallel
/// collectives do not queue behind gradient buckets and parameter gathers;
/// `fsdp`, ZeRO-3's parameter gathers and gradient reduce-scatters
/// coalesced per layer, the gathers issued one layer ahead.
struct OverlapKinds {
  bool grad = true, tp = false, fsdp = false;
  static OverlapKinds all() { return {true, true, true}; }
  static OverlapKinds none() { return {false, false, false}; }
};
/// `all`, `none` or a comma-separated list of kinds; an error naming the
/// kinds otherwise.
FailureOr<OverlapKinds> parseOverlap(StringRef text, std::string &error);
/// The module's `stage.overlap`; without one, `grad` alone (the traces of
/// programs not built by stage-train).
/// How the routers spread tokens over the experts: the module's
/// `stage.routing` (the enclosing module's, in a disaggregated group) as
/// Stage/Support/Routing.h spells it; empty (uniform) when absent. Setting
/// "uniform" or "" removes it.
StringRef getRoutingSpec(Operation *op);
void setRoutingSpec(ModuleOp module, StringRef spec);

OverlapKinds getOverlap(ModuleOp module);
void setOverlap(ModuleOp module, OverlapKinds kinds);

//===----------------------------------------------------------------------===//
// Frontends' names
//===----------------------------------------------------------------------===//

/// The names of the dimensions of an op's result (`stage.dims`), when two
/// symbols would otherwise share a value; null when absent.
ArrayAttr getDimNames(Operation *op);
void setDimNames(Operation *op, ArrayAttr names);
void removeDimNames(Operation *op);
StringRef getDimNamesAttrName();

/// On a function argument: its dimension names, a weight's name
/// (`stage.param`) and group (`stage.group`), or an input's name
/// (`stage.input`); null when absent.
ArrayAttr getArgDimNames(FunctionOpInterface fn, unsigned arg);
StringAttr getArgWeightName(FunctionOpInterface fn, unsigned arg);
StringAttr getArgWeightGroup(FunctionOpInterface fn, unsigned arg);
StringAttr getArgInputName(FunctionOpInterface fn, unsigned arg);

} // namespace mlir::stage

#endif // STAGE_DIALECT_STAGE_IR_STAGEANNOTATIONS_H
