//===- StageBase.td - The stage dialect ----------------------*- tablegen -*-===//

#ifndef STAGE_BASE
#define STAGE_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Stage_Dialect : Dialect {
  let name = "stage";
  let cppNamespace = "::mlir::stage";
  let summary = "Symbolic tensor graphs of distributed LLM workloads";
  let description = [{
    The `stage` dialect describes the computation and communication of a
    distributed training or inference step with symbolic dimensions: a tensor
    of type `!stage.tensor<[B/dp, S, D], bf16>` has a shape made of
    expressions over named symbols (model sizes and parallel degrees), so one
    small program describes a model of any depth on any number of ranks.
    Passes turn a forward graph into a training step, shard it over a
    `stage.grid`, pipeline it, and a translation binds the symbols and writes
    one Chakra execution trace per rank.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  // The attributes the passes and the frontends put on ops they do not own
  // (StageAnnotations.h has their accessors, verifyOperationAttribute their
  // checks). Their types are checked there, where the dialect's attributes
  // are complete.
  let discardableAttrs = (ins
    // On the module: the symbols' values, what the model is, rule overrides.
    "::mlir::DictionaryAttr":$bindings,
    "::mlir::DictionaryAttr":$model,
    "::mlir::DictionaryAttr":$sharding_rules,
    // Shardings (#stage.sharding), from stage-shard to stage-partition: of
    // each result, of each region's arguments (a list per region), the
    // operands an op needs, what an op produces before its results are
    // resharded; and a frontend's plan for a value (an op of one result).
    "::mlir::ArrayAttr":$sharding,
    "::mlir::ArrayAttr":$arg_sharding,
    "::mlir::ArrayAttr":$operand_sharding,
    "::mlir::ArrayAttr":$natural_sharding,
    "::mlir::Attribute":$plan_sharding,
    // A trained program's result that goes on to the rest of the model.
    "::mlir::UnitAttr":$output,
    // Recomputation: ops stage-recompute marks recomputable, those whose
    // result is stored all the same, and the copies autodiff makes.
    "::mlir::UnitAttr":$recomputable,
    "::mlir::UnitAttr":$recompute_keeps_result,
    "::mlir::UnitAttr":$recompute,
    // The ops of an unfused attention core (selective recomputation).
    "::mlir::UnitAttr":$attention_core,
    // On the module: the communication a trace overlaps with compute
    // (stage-train's overlap=; docs/Overlap.md).
    "::mlir::ArrayAttr":$overlap,
    // On the module: how the routers spread tokens over the experts
    // (`zipf:S`, `loads:...`; uniform when absent), which the time model
    // reads (docs/CostModel.md).
    "::mlir::StringAttr":$routing,
    // On a stage.repeat of a hybrid's period: the layers one iteration is.
    "::mlir::IntegerAttr":$layer_period,
    // On the ops of a model layer outside any layer stack (Zamba2's layers
    // with a shared block): the layer's index, which stage-pipeline reads.
    "::mlir::IntegerAttr":$layer,
    // On a weight of a pipeline stage that other stages hold too (a tied
    // embedding, a shared block): the indices of every stage holding it.
    "::mlir::DenseI64ArrayAttr":$held_by,
    // Serving: the send and receive of a pipeline's sampled tokens, from
    // its last stage back to its first.
    "::mlir::UnitAttr":$token_feedback,
    // The grid axes a cross-entropy's vocabulary is split over.
    "::mlir::ArrayAttr":$vocab_parallel,
    // Frontends: the dimension names of a value, and on function
    // arguments a weight's name and group or an input's name.
    "::mlir::ArrayAttr":$dims,
    "::mlir::StringAttr":$param,
    "::mlir::StringAttr":$group,
    "::mlir::StringAttr":$input
  );
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();

    /// The module attribute holding the symbol bindings.
    static constexpr ::llvm::StringLiteral getBindingsAttrName() {
      return BindingsAttrHelper::getNameStr();
    }

    /// The element count of a tensor type, computed once per type: the
    /// analyses ask for it at every op of every evaluation (a plan search
    /// evaluates one step under thousands of bindings), and types live as
    /// long as the context.
    ::sym::Expr getNumElementsOf(::mlir::Type type,
        ::llvm::function_ref<::sym::Expr()> compute);
    /// Its size in bytes, likewise.
    ::sym::Expr getSizeInBytesOf(::mlir::Type type,
        ::llvm::function_ref<::sym::Expr()> compute);

  private:
    ::llvm::DenseMap<::mlir::Type, ::sym::Expr> numElements, sizeInBytes;
    ::llvm::sys::SmartRWMutex<true> typeCacheMutex;

  public:
  }];
}

class Stage_Op<string mnemonic, list<Trait> traits = []>
    : Op<Stage_Dialect, mnemonic, traits>;
class Stage_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Stage_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}
class Stage_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Stage_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

#endif // STAGE_BASE
