//===- Passes.td - Conversions into stage --------------------*- tablegen -*-===//

#ifndef STAGE_CONVERSION_PASSES
#define STAGE_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertLinalgToStage : Pass<"convert-linalg-to-stage", "::mlir::ModuleOp"> {
  let summary = "Graphs of linalg on tensors (torch-mlir, StableHLO, TOSA) to stage";
  let description = [{
    Every `func.func` on ranked, static tensors becomes a `stage` graph on
    `!stage.tensor` types with constant dimensions (`stage-symbolize` then
    names them):

    * contractions (`linalg.matmul`, `batch_matmul`, `matvec`, `vecmat`,
      `linalg.contract`, a `linalg.generic` whose payload multiplies two
      inputs and accumulates) become `stage.einsum`, the spec read from the
      indexing maps;
    * elementwise `linalg.generic`, `linalg.map` and `linalg.elementwise`
      become `stage.ewise` of the kind their payload computes (add, mul,
      exp, tanh, GELU, SiLU, ...), or `generic` with one FLOP per payload
      operation when the payload is no known kind; broadcast operands
      become `stage.broadcast`;
    * sum and max reductions (`linalg.reduce`, reducing `generic`s) become
      `stage.reduce`, `linalg.softmax` `stage.softmax`, `linalg.transpose`
      and permuting `generic`s `stage.transpose`, `linalg.broadcast`
      `stage.broadcast`; `tensor.expand_shape` and `collapse_shape` become
      `stage.reshape`, `tensor.extract_slice` (of one dimension)
      `stage.slice`, `tensor.concat` `stage.concat`;
    * `tensor.empty` and `linalg.fill` that only initialize outputs are
      dropped; tensor constants (`arith.constant`) become untrained
      buffers (`stage.param` of kind `buffer`); arguments with a
      `stage.param = "name"` attribute become weights, and so do those
      `weights=` names (by position or location name: a frontend that
      annotates nothing, as torch-mlir's, says which arguments are
      parameters this way); the other arguments are inputs. An argument's `stage.dims = ["B", "S", "D"]` is kept for
      `stage-symbolize`.
    * Upstream `shard` annotations become the plan: the `shard.grid`'s
      axes are named by `grid-axes` (dp, cp, ep, tp) and its shape gives
      their degrees (module bindings); a `shard.shard` gives the sharding
      its value keeps (`stage.plan_sharding`, which `stage-shard` honors).

    After conversion the frontends' flattening is undone: a reshape that
    merges row dimensions moves past the ops that treat them as
    independent rows (einsums whose merged index only that operand carries,
    elementwise ops broadcasting over the unmerged trailing dimensions),
    unit batch indices leave einsums, transposes feeding or read from an
    einsum become its indexing, and reshape pairs fold (docs/Frontends.md).

    Anything else is an error naming the op, at its location.
  }];
  let options = [
    ListOption<"gridAxes", "grid-axes", "std::string",
               "stage axis names (dp, cp, ep, tp) of the shard.grid's axes, in order">,
    ListOption<"weights", "weights", "std::string",
               "arguments that are weights, by position (0, 1, ...) or by "
               "location name, for frontends that do not annotate them">,
  ];
  let dependentDialects = ["::mlir::stage::StageDialect"];
}

#endif // STAGE_CONVERSION_PASSES
