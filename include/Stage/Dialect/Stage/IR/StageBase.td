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
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();

    /// The module attribute holding the symbol bindings.
    static constexpr ::llvm::StringLiteral getBindingsAttrName() {
      return ::llvm::StringLiteral("stage.bindings");
    }
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
