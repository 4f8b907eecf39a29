//===- Passes.td - Passes of stage ---------------------------*- tablegen -*-===//

#ifndef STAGE_TRANSFORMS_PASSES
#define STAGE_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def StageAutodiff : Pass<"stage-autodiff", "::mlir::ModuleOp"> {
  let summary = "Turn forward graphs into training iterations";
  let description = [{
    Every forward program of the module (a function returning its loss, or
    each stage of a `stage.pipeline`) becomes one training iteration:

    * the weights stay outside and the rest moves into a
      `stage.microbatches M` op whose `forward` region computes one
      micro-batch of `B/M` sequences and keeps exactly the activations the
      backward needs, and whose `backward` region builds the gradient of
      every op through its `AutodiffOpInterface` rule;
    * each `stage.repeat` gets a reverse `stage.repeat` in the backward whose
      body is the gradient of the forward body, fed the kept activations of
      each layer as slices, producing the stacked weight gradients;
    * the micro-batch gradients are summed (the op's results), and every
      weight gets an optimizer step with its states as `stage.param` values
      (fp32 master copy and moments under mixed precision).

    A function without a loss is trained by seeding the gradient of each of
    its results (an input named `seed.N`). Inputs that are not weights get
    no gradient. An op without a gradient rule is an error naming it.
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Micro-batches per iteration (M); must divide the batch B">,
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "sgd, adam or adamw">,
    Option<"precision", "precision", "std::string", "\"mixed\"",
           "mixed: bf16 weights, activations and gradients with fp32 master "
           "weights and moments; fp32: everything in fp32">,
  ];
  let dependentDialects = ["::mlir::stage::StageDialect"];
}

def StageRecompute : Pass<"stage-recompute", "::mlir::ModuleOp"> {
  let summary = "Choose which activations the backward recomputes";
  let description = [{
    Marks forward ops `stage.recomputable`; `stage-autodiff` then keeps none
    of their results and re-runs them (marked `stage.recompute`) in the
    backward, right before their first use, keeping their inputs instead.

    * `none`: every activation the backward needs is kept.
    * `selective`: the attention core is recomputed (Korthikanti et al.
      2022): `stage.attention`, and the ops an importer marked
      `stage.attention_core` in an unfused attention (scores, softmax,
      dropout, values).
    * `full`: only each layer's input is kept; the ops of every
      `stage.repeat` body are recomputed.

    Must run before `stage-autodiff`.
  }];
  let options = [
    Option<"policy", "policy", "std::string", "\"none\"",
           "none, selective or full">,
  ];
}

#endif // STAGE_TRANSFORMS_PASSES
