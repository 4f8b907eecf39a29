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
    Option<"microBatchSize", "micro-batch-size", "int64_t", "0",
           "Sequences per micro-batch and data-parallel rank, as Megatron-LM "
           "counts them: M = B / (size * dp * ep) (0: use micro-batches)">,
    Option<"dp", "dp", "int64_t", "0",
           "With micro-batch-size: the data-parallel degree (0: the module's "
           "binding, else 1)">,
    Option<"ep", "ep", "int64_t", "0",
           "With micro-batch-size: the expert-parallel degree, which also "
           "splits the batch (0: the module's binding, else 1)">,
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "sgd, adam or adamw">,
    Option<"precision", "precision", "std::string", "\"mixed\"",
           "mixed: bf16 weights, activations and gradients with fp32 master "
           "weights and moments; fp32: everything in fp32">,
  ];
  let dependentDialects = ["::mlir::stage::StageDialect"];
}

def StageServe : Pass<"stage-serve", "::mlir::ModuleOp"> {
  let summary = "Turn forward graphs into serving programs with a KV cache";
  let description = [{
    Every forward program of the module (a function returning its loss, or
    each stage of a `stage.pipeline`) becomes the serving of a batch of `B`
    requests with prompts of `S` tokens:

    * the loss and labels go; the LM head reads only each request's last
      position, and greedy sampling (a top-1 over the vocabulary) gives the
      next token;
    * every attention's keys and values are written into a `stage.kv_cache`
      per layer stack, `[layers, B, S + N, heads, head_dim]`, by
      `stage.cache_write`, and attention reads the cache so far;
    * the weights and caches stay outside a `stage.serve` op whose
      `prefill` region runs the prompts of one micro-batch of `B/M`
      requests and whose `decode` region holds `stage.repeat N step "i"`:
      one token per request attending to `S + i + 1` positions;
    * in a pipeline, the last stage sends each sampled token back to the
      first (channel 2), which embeds it in the next decode step.

    With `chunked-prefill=C` (continuous batching), the decode region holds
    `J = S/C` mixed iterations instead: the B running requests' next tokens
    (context `T = S + N/2`, the middle of their decode) and chunk `j` of an
    arriving request's prompt, flattened into one batch of `B + C` tokens
    for the projections and MLPs, with attention split by part.

    `N` and `M` join the module's bindings. When `tp` exceeds the KV heads
    (and is a multiple of them), every rank keeps one KV head, replicated
    `tp/KV` times as serving engines do: the symbol `KV` becomes `KVr`,
    bound to `tp`.
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Groups of requests in flight (M); must divide the batch B">,
    Option<"decodeTokens", "decode-tokens", "int64_t", "0",
           "Decode steps per request (N); 0: prefill only">,
    Option<"phase", "phase", "std::string", "\"\"",
           "prefill, decode or both (default: both when decode-tokens > 0, "
           "else prefill)">,
    Option<"tp", "tp", "int64_t", "0",
           "The tensor-parallel degree the program will get (0: the "
           "module's binding, else 1): above the KV heads, each rank keeps "
           "one KV head (KVr = tp)">,
    Option<"chunkedPrefill", "chunked-prefill", "int64_t", "0",
           "Continuous batching: every iteration decodes one token of each "
           "of the B running requests and prefills this many prompt tokens "
           "of an arriving one (0: separate prefill and decode)">,
    Option<"ep", "ep", "int64_t", "0",
           "The expert-parallel degree the program will get (0: the "
           "module's binding, else 1): a decode step's routed tokens must "
           "fill whole tokens per expert and rank">,
    Option<"cp", "cp", "int64_t", "0",
           "The context-parallel degree the program will get (0: the "
           "module's binding, else 1); it splits prompts, so it serves the "
           "prefill only">,
    Option<"handoff", "handoff", "bool", "false",
           "Disaggregated serving (phase=prefill or decode): the prefill "
           "hands each group's KV cache to a decode group, which receives "
           "it before decoding (stage.serve handoff)">,
  ];
  let dependentDialects = ["::mlir::stage::StageDialect"];
}

def StageDisaggregate : Pass<"stage-disaggregate", "::mlir::ModuleOp"> {
  let summary = "Serve prefill and decode on separate rank groups";
  let description = [{
    Disaggregated serving (DistServe, Splitwise, Mooncake): the model module
    becomes two nested modules, `@prefill` and `@decode`, each the result of
    `stage-infer` under its own plan, `prefill` with `phase=prefill
    handoff` and `decode` with `phase=decode handoff`. The trace set numbers
    the prefill group's ranks first; each group of requests' KV cache moves
    from the prefill ranks that hold it to the decode ranks that need it
    (docs/Inference.md). `stage-infer` builds this pass from its `prefill=`
    and `decode=` options; the strings here are whole `stage-infer` plans.

    ```mlir
    module {
      module @prefill attributes {stage.bindings = {..., tp = 8}} { ... }
      module @decode attributes {stage.bindings = {..., dp = 4, tp = 2}} { ... }
    }
    ```
  }];
  let options = [
    Option<"prefill", "prefill", "std::string", "\"\"",
           "The prefill group's stage-infer plan">,
    Option<"decode", "decode", "std::string", "\"\"",
           "The decode group's stage-infer plan (with decode-tokens)">,
    Option<"gpus", "gpus", "int64_t", "0",
           "The GPUs of the run: the two groups' ranks must add up to it "
           "(0: whatever they take)">,
  ];
  let dependentDialects = ["::mlir::stage::StageDialect"];
}

def StageSymbolize : Pass<"stage-symbolize", "::mlir::ModuleOp"> {
  let summary = "Name the static extents of an imported graph";
  let description = [{
    An imported graph has constant extents (768, 3072); the sharding rules,
    the micro-batching and the reports work on named ones (D, F, B). The
    options are the symbols and their values:
    `stage-symbolize="B=8,S=128,D=768,H=12,F=3072"` (or
    `symbols=B=8,S=128,...`). Every tensor dimension is a slot; slots that
    the ops make equal form one class, named, in this order, by a
    `stage.dims` annotation on the input or weight it starts from, by the
    one symbol whose value is its extent, or by a reshape or concat relating
    it to named classes (`D/H`, `B*S`); otherwise it keeps its constant. A
    class two symbols could name and no rule decides is an error listing the
    candidates (docs/Frontends.md).
  }];
  let options = [
    ListOption<"symbols", "symbols", "std::string",
               "The symbols and their values, as in B=8,S=128,D=768">,
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

def StagePipeline : Pass<"stage-pipeline", "::mlir::ModuleOp"> {
  let summary = "Split the layers into pipeline stages";
  let description = [{
    Splits each forward program into `pp` stages (`pp * virtual-stages` for
    the interleaved schedule) of consecutive decoder layers: the embedding
    goes with the first stage, the final norm, head and loss with the last.
    By default the split balances the forward FLOPs of the stages (the
    embedding and head count); `layers-per-stage=3,4,4,3` fixes it. Values
    that cross to a later stage (the hidden state) become a `stage.send` at
    the end of their stage and a `stage.recv` at the start of the other, on
    the `pp` axis; `stage-autodiff` then sends their gradients back.

    The result is a `stage.pipeline` op recording the schedule (`gpipe`,
    `1f1b`, Megatron's `interleaved` 1F1B with `virtual-stages` chunks per
    rank, the zero-bubble `zb-h1` and `zb-v`, DeepSeek's `dualpipe-v` and
    `dualpipe`, whose `pp` stages are followed by a mirrored copy of them:
    docs/Pipeline.md); the micro-batch count comes from the training step,
    and the trace emitter expands the order. Runs before `stage-autodiff`.
  }];
  let options = [
    Option<"pp", "pp", "int64_t", "0",
           "Pipeline stages (0: the module's binding, else 1)">,
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipe-v or dualpipe">,
    Option<"virtualStages", "virtual-stages", "int64_t", "0",
           "Model chunks per rank for the interleaved schedule, at least 2 "
           "(0: 2 for the interleaved schedule, else 1)">,
    ListOption<"layersPerStage", "layers-per-stage", "int64_t",
               "Layers of each (virtual) stage, in order">,
    Option<"onlyIfSplit", "only-if-split", "bool", "false",
           "Leave the program as it is when the plan is one 1F1B stage "
           "(stage-train: pp may come from the module's bindings)">,
    Option<"order", "order", "std::string", "\"pp,dp,cp,ep,tp\"",
           "Grid axes, outermost first; the axes not listed keep their places">,
  ];
}

def StageShard : Pass<"stage-shard", "::mlir::ModuleOp"> {
  let summary = "Give every value a sharding from the parallelization plan";
  let description = [{
    Declares the `stage.grid` (axes `pp, dp, cp, ep, tp` by default, outermost
    first), binds the degrees, and annotates every value with the sharding it
    keeps and every op with the shardings it needs of its operands.

    Values keep the sharding the logical-axis rules give their type
    (Megatron-LM defaults): batch over `dp` (and `ep`, extra data parallelism
    for the dense parts), sequence over `cp` and, with sequence parallelism,
    over `tp` for activations between tensor-parallel regions; heads, kv
    heads (replicated when `tp` exceeds them), ffn width and vocabulary over
    `tp`; experts over `ep`. Weight gradients stay partial sums over the
    data-parallel axes until the iteration's reduction. ZeRO partitions the
    optimizer states (1), also the gradients (2), also the weights (3) over
    the data-parallel group.

    Each op then chooses how the grid axes split its index space (its
    contraction indices for an einsum) to need the least communication,
    through its sharding rule; `stage-partition` turns the differences
    between what is kept and what is needed into collectives.

    Rules can be overridden per role with `rules=FILE.json` or a module
    attribute `stage.sharding_rules`: `{"roles": {"seq": ["cp"]},
    "symbols": {"X": "ffn"}}`.
  }];
  let options = [
    Option<"dp", "dp", "int64_t", "0",
           "Data-parallel degree (0: the module's binding, else 1)">,
    Option<"tp", "tp", "int64_t", "0",
           "Tensor-parallel degree (0: the module's binding, else 1)">,
    Option<"cp", "cp", "int64_t", "0",
           "Context-parallel degree (0: the module's binding, else 1)">,
    Option<"ep", "ep", "int64_t", "0",
           "Expert-parallel degree, a grid axis of its own (Megatron-LM "
           "carves it out of its data-parallel size, dp*ep here) (0: the "
           "module's binding, else 1)">,
    Option<"pp", "pp", "int64_t", "0",
           "Pipeline-parallel degree, for the grid (0: the module's binding, else 1)">,
    Option<"sp", "sp", "bool", "true",
           "Megatron sequence parallelism (with tp > 1)">,
    Option<"keepGathered", "keep-gathered", "bool", "false",
           "Keep the gathered copy of an activation for the backward instead "
           "of gathering it again (memory for communication)">,
    Option<"zero", "zero", "int64_t", "0", "ZeRO stage: 0, 1, 2 or 3 (= FSDP)">,
    Option<"order", "order", "std::string", "\"pp,dp,cp,ep,tp\"",
           "Grid axes, outermost first (defines the rank numbering); the "
           "axes not listed keep their places">,
    Option<"rules", "rules", "std::string", "\"\"",
           "JSON file overriding the logical-axis rules">,
    Option<"routing", "routing", "std::string", "\"uniform\"",
           "How routers spread tokens over experts: uniform, zipf:S or "
           "loads:F0/F1/... (one fraction per expert); the time model reads "
           "it">,
  ];
}

def StageFoldLayers : Pass<"stage-fold-layers", "::mlir::ModuleOp"> {
  let summary = "Fold the repeated layers of a flat graph into a stage.repeat";
  let description = [{
    An imported model is one flat graph: every decoder layer spelled out.
    This pass finds the longest run of structurally identical, consecutive
    layers in each function (the same ops with the same types, each layer
    fed by the previous one's output, each with weights of its own) and
    folds it into one `stage.repeat L` whose body is the first layer: the
    layers' weights become stacked `[L, ...]` parameters (named without the
    layer index: `h.3.mlp.c_fc.weight` -> `h.mlp.c_fc.weight`), what the
    layers share (a mask, rope tables) is read from outside the body, and
    `L` is bound to the number of layers. The folded graph can be pipelined
    and its IR no longer grows with the depth. A function without such a run
    is left as it is.
  }];
  let options = [
    Option<"minLayers", "min-layers", "int64_t", "2",
           "The fewest layers worth folding">,
  ];
}

def StagePartition : Pass<"stage-partition", "::mlir::ModuleOp"> {
  let summary = "Insert collectives and rewrite every type to its local shape";
  let description = [{
    Where a value's sharding differs from what a consumer needs, inserts the
    collective over exactly the axes involved: a partial sum becomes an
    `all_reduce` (or a `reduce_scatter` into a split), a split dimension
    that must be whole an `all_gather`, a split moving to another dimension
    an `all_to_all`, and a replicated value that a consumer needs split a
    free `local_split`. Then every type becomes what one rank holds
    (`D/tp`), and the annotations are dropped: the result is an SPMD
    program, still symbolic.
  }];
  let options = [
    Option<"overlap", "overlap", "std::string", /*default=*/"\"\"",
           "Records on the module what its traces overlap with compute: "
           "all, none or a comma-separated list of grad, tp, fsdp (empty: "
           "records nothing; the traces then overlap grad alone)">,
  ];
}

def StageSumSharedGradients
    : Pass<"stage-sum-shared-gradients", "::mlir::ModuleOp"> {
  let summary = "sum the gradients of a weight that several pipeline stages "
                "hold";
  let description = [{
    A weight several stages use (a tied embedding on the first and the last
    stage, Zamba2's shared blocks) is a copy in each holding stage, marked
    by `stage-pipeline` with the stages that hold it (`stage.held_by`).
    Before the optimizer updates a copy, its gradient (already reduced over
    the data-parallel ranks: a shard under ZeRO) is summed with the other
    copies': an all-reduce over `pp` when one copy sits on each rank of the
    pipeline (three ranks or more), otherwise one `stage.send` to and one
    `stage.recv` from each other holder on the `pp` axis and adds (for two
    holders, the bytes of Megatron-LM's all-reduce over the embedding
    group). Of the copies on one rank (chunks of an interleaved or V
    schedule) the last takes part, the others hand it their gradient in
    memory. DualPipe's mirrored stages are holders too. The updates of
    shared weights move to the end of their stage, in the weights' order,
    so that every holder issues them alike. Runs after `stage-partition`,
    before `stage-sum-mirrored-gradients`; programs without shared weights
    are left as they are.
  }];
}

def StageSumMirroredGradients
    : Pass<"stage-sum-mirrored-gradients", "::mlir::ModuleOp"> {
  let summary = "DualPipe: sum the gradients of the two copies of each stage";
  let description = [{
    Under the `dualpipe` schedule each rank `r` holds stage `r` of one copy
    of the model and stage `pp - 1 - r` of the other, and each copy trains
    on half the micro-batches. Before the optimizer updates a weight, the
    two copies of its gradient (on ranks `r` and `pp - 1 - r`, already
    reduced over the data-parallel ranks) are exchanged and added, so both
    copies take the same step: one `stage.send` and one `stage.recv` on the
    `pp` axis per weight and rank (the bytes of a two-rank all-reduce), and
    an `add`. Runs after `stage-partition`, on the gradients the optimizer
    reads (a data-parallel shard under ZeRO); other programs are left as
    they are. Weights several stages hold (`stage.held_by`) are summed over
    all their copies by `stage-sum-shared-gradients` and skipped here.
  }];
}

#endif // STAGE_TRANSFORMS_PASSES
