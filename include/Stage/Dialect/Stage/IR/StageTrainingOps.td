//===- StageTrainingOps.td - Training-step ops ---------------*- tablegen -*-===//
//
// Included by StageOps.td: the ops autodiff produces (gradients of the
// forward ops, the micro-batch loop, the optimizer step) and the dropout
// of the forward graph.
//
//===----------------------------------------------------------------------===//

def Stage_OptimizerKind : I32EnumAttr<"OptimizerKind", "optimizer", [
    I32EnumAttrCase<"sgd", 0>, I32EnumAttrCase<"adam", 1>,
    I32EnumAttrCase<"adamw", 2>]> {
  let cppNamespace = "::mlir::stage";
}

// The values of stage-recompute's and stage-autodiff's options.
def Stage_RecomputePolicy : I32EnumAttr<"RecomputePolicy", "recomputation", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"selective", 1>,
    I32EnumAttrCase<"full", 2>]> {
  let cppNamespace = "::mlir::stage";
}

def Stage_TrainingPrecision : I32EnumAttr<"TrainingPrecision", "training precision", [
    I32EnumAttrCase<"mixed", 0>, I32EnumAttrCase<"fp32", 1>]> {
  let cppNamespace = "::mlir::stage";
}

def Stage_DropoutOp : Stage_ShardedOp<"dropout", [AllTypesMatch<["input", "result"]>]> {
  let summary = "dropout, returning the kept-element mask for the backward";
  let description = [{
    Zeroes elements at random and scales the rest; the mask (one byte per
    element) is what the backward needs.

    ```mlir
    %y, %mask = stage.dropout %x : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, S, D], i8>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input);
  let results = (outs Stage_Tensor:$result, Stage_Tensor:$mask);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($mask))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients of forward ops
//===----------------------------------------------------------------------===//

def Stage_SoftmaxGradOp : Stage_ShardedOp<"softmax_grad",
    [AllTypesMatch<["output", "grad", "result"]>]> {
  let summary = "gradient of softmax: y * (dy - sum(dy * y))";
  let description = [{
    ```mlir
    %dx = stage.softmax_grad %y, %dy dim 3 : !stage.tensor<[B, H, S, S], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$output, Stage_Tensor:$grad, I64Attr:$dim);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = "$output `,` $grad `dim` $dim attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def Stage_NormGradOp : Stage_ShardedOp<"norm_grad"> {
  let summary = "gradients of a normalization: input, weight, bias";
  let description = [{
    From the forward input and the output gradient. The parameter gradients
    follow the input gradient: the weight's when `weight` is given, then the
    bias's with `with_bias` (layer norm).

    ```mlir
    %dx, %dw = stage.norm_grad rms %x, %dy weight %w
        : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, D], bf16>, !stage.tensor<[D], bf16>)
        -> (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D], bf16>)
    ```
  }];
  let arguments = (ins Stage_NormKind:$kind, Stage_Tensor:$input,
                       Stage_Tensor:$grad, Optional<Stage_Tensor>:$weight,
                       UnitAttr:$with_bias);
  let results = (outs Stage_Tensor:$input_grad,
                      Variadic<Stage_Tensor>:$param_grads);
  let assemblyFormat = [{
    $kind $input `,` $grad (`weight` $weight^)? (`with_bias` $with_bias^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Value getWeightGrad() {
      return getWeight() ? getParamGrads()[0] : ::mlir::Value();
    }
    ::mlir::Value getBiasGrad() {
      return getWithBias() ? getParamGrads().back() : ::mlir::Value();
    }
  }];
}

def Stage_EmbeddingGradOp : Stage_ShardedOp<"embedding_grad"> {
  let summary = "gradient of the table: rows of the output gradient scatter-added";
  let description = [{
    ```mlir
    %dt = stage.embedding_grad %dy, %ids
        : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[V, D], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$grad, Stage_Tensor:$ids);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $grad `,` $ids attr-dict `:` functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Stage_CrossEntropyGradOp : Stage_ShardedOp<"cross_entropy_grad"> {
  let summary = "gradient of the mean cross-entropy w.r.t. the logits";
  let description = [{
    `(softmax(logits) - onehot(labels)) / tokens`.

    ```mlir
    %dl = stage.cross_entropy_grad %logits, %labels
        : (!stage.tensor<[B, S, V], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[B, S, V], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$logits, Stage_Tensor:$labels);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Stage_AttentionGradOp : Stage_ShardedOp<"attention_grad"> {
  let summary = "flash-attention backward: gradients of q, k and v";
  let description = [{
    Recomputes the scores from q and k (no score matrix is stored), then
    computes dV, dP, dQ and dK. The recomputation counts as recompute FLOPs.
    `window` is the forward's sliding window; with `softcap`, the capped
    scores are recomputed and differentiated: 6 more FLOPs per score.

    ```mlir
    %dq, %dk, %dv = stage.attention_grad %q, %k, %v, %o, %do causal
        : (...) -> (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>,
                    !stage.tensor<[B, S, KV, Dh], bf16>)
    ```
  }];
  let arguments = (ins Stage_Tensor:$query, Stage_Tensor:$key,
                       Stage_Tensor:$value, Stage_Tensor:$output,
                       Stage_Tensor:$grad, UnitAttr:$causal,
                       OptionalAttr<Stage_ExprAttr>:$window,
                       UnitAttr:$softcap);
  let results = (outs Stage_Tensor:$query_grad, Stage_Tensor:$key_grad,
                      Stage_Tensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $grad (`causal` $causal^)?
    (`window` $window^)? (`softcap` $softcap^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Stage_Conv1dGradOp : Stage_ShardedOp<"conv1d_grad"> {
  let summary = "gradients of a depthwise convolution's input and taps";
  let description = [{
    `2 K` FLOPs per element for the input gradient and as many for the taps'.
  }];
  let arguments = (ins Stage_Tensor:$input, Stage_Tensor:$weight,
                       Stage_Tensor:$grad);
  let results = (outs Stage_Tensor:$input_grad, Stage_Tensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Stage_SsmScanGradOp : Stage_ShardedOp<"ssm_scan_grad"> {
  let summary = "gradients of a selective scan's inputs";
  let description = [{
    The scan run backward: gradients of `x`, `dt`, `a`, `B`, `C` and `D`
    from the output's. The selective form recomputes the forward states
    inside the kernel (Mamba's fused backward) and runs the reverse
    recurrence: 27 FLOPs per (token, channel, state), 9 of them the
    recomputation, and 4 per (token, channel) for the skip. The chunked
    form and the delta rule cost twice the forward's FLOPs.
  }];
  let arguments = (ins Stage_Tensor:$input, Stage_Tensor:$dt, Stage_Tensor:$a,
                       Stage_Tensor:$b, Stage_Tensor:$c, Stage_Tensor:$d,
                       Stage_Tensor:$grad,
                       OptionalAttr<Stage_ExprAttr>:$chunk,
                       UnitAttr:$delta);
  let results = (outs Stage_Tensor:$input_grad, Stage_Tensor:$dt_grad,
                      Stage_Tensor:$a_grad, Stage_Tensor:$b_grad,
                      Stage_Tensor:$c_grad, Stage_Tensor:$d_grad);
  let assemblyFormat = [{
    $input `,` $dt `,` $a `,` $b `,` $c `,` $d `,` $grad (`chunk` $chunk^)?
    (`delta` $delta^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Stage_TopKGradOp : Stage_ShardedOp<"topk_grad"> {
  let summary = "gradient of the router scores from the gate weights";
  let description = [{
    Scatters the gate-weight gradients back to the selected experts' scores.

    ```mlir
    %ds = stage.topk_grad %dw, %ids
        : (!stage.tensor<[B, S, K], bf16>, !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[B, S, E], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$grad, Stage_Tensor:$indices);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Stage_DispatchGradOp : Stage_ComputeOp<"dispatch_grad"> {
  let summary = "gradient of the tokens: each token's K buffer rows summed";
  let description = [{
    ```mlir
    %dx = stage.dispatch_grad %dbuf, %ids
        : (!stage.tensor<[E, C, D], bf16>, !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[B, S, D], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$grad, Stage_Tensor:$indices);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Stage_CombineGradOp : Stage_ComputeOp<"combine_grad"> {
  let summary = "gradients of the expert outputs and of the gate weights";
  let description = [{
    ```mlir
    %dy, %dw = stage.combine_grad %dout, %y, %w, %ids
        : (...) -> (!stage.tensor<[E, C, D], bf16>, !stage.tensor<[B, S, K], bf16>)
    ```
  }];
  let arguments = (ins Stage_Tensor:$grad, Stage_Tensor:$expert_outputs,
                       Stage_Tensor:$weights, Stage_Tensor:$indices);
  let results = (outs Stage_Tensor:$expert_grad, Stage_Tensor:$weight_grad);
  let assemblyFormat = [{
    $grad `,` $expert_outputs `,` $weights `,` $indices attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Stage_PadOp : Stage_ShardedOp<"pad"> {
  let summary = "a tensor placed into zeros along one dimension";
  let description = [{
    The inverse of `stage.slice` (its gradient): the result has extent
    `size` along `dim`, the operand at `offset`, zeros elsewhere.

    ```mlir
    %y = stage.pad %x dim 3 offset Dn size Dn + Dr
        : !stage.tensor<[B, S, H, Dr], bf16> -> !stage.tensor<[B, S, H, Dn + Dr], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input, I64Attr:$dim,
                       Stage_ExprAttr:$offset, Stage_ExprAttr:$size);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim `offset` custom<SymExpr>($offset) `size`
    custom<SymExpr>($size) attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The training step
//===----------------------------------------------------------------------===//

def Stage_LossOp : Stage_Op<"loss"> {
  let summary = "marks the scalar whose gradient seeds the backward pass";
  let description = [{
    ```mlir
    stage.loss %l : !stage.tensor<[], f32>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input))";
}

def Stage_MicrobatchesOp : Stage_Op<"microbatches", [RecursiveMemoryEffects,
    DeclareOpInterfaceMethods<Stage_CostOpInterface>]> {
  let summary = "forward and backward of one micro-batch, run `count` times";
  let description = [{
    The `forward` region computes one micro-batch and yields the values the
    backward needs (the activations kept); the `backward` region receives
    them as arguments, in that order, and yields per-micro-batch weight
    gradients. The op's results are those gradients summed over the `count`
    micro-batches. The order in which forward and backward steps of
    different micro-batches run is the pipeline schedule's; without a
    pipeline, each forward is followed by its backward.

    ```mlir
    %dw = stage.microbatches M -> (!stage.tensor<[D, F], bf16>) forward {
      ...
      stage.yield %x : !stage.tensor<[B/M, S, D], bf16>
    } backward {
    ^bb0(%x: !stage.tensor<[B/M, S, D], bf16>):
      ...
      stage.yield %g : !stage.tensor<[D, F], bf16>
    }
    ```
  }];
  let arguments = (ins Stage_ExprAttr:$count);
  let results = (outs Variadic<Stage_Tensor>:$results);
  let regions = (region SizedRegion<1>:$forward, SizedRegion<1>:$backward);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getForwardBlock() { return getForward().front(); }
    ::mlir::Block &getBackwardBlock() { return getBackward().front(); }
    /// The values the forward region keeps for the backward.
    ::mlir::OperandRange getSavedValues();
  }];
}

def Stage_OptimizerStepOp : Stage_Op<"optimizer_step", [
    AttrSizedOperandSegments, DeclareOpInterfaceMethods<Stage_CostOpInterface>]> {
  let summary = "one optimizer update of a weight and its states";
  let description = [{
    Updates `weight` from the accumulated gradient. Under mixed precision the
    update is applied to the fp32 `master` copy and the weight is written
    back from it. Adam and AdamW keep the two moments.

    ```mlir
    stage.optimizer_step adamw %w, %g master %m32 moments %m, %v
        : !stage.tensor<[D, F], bf16>, !stage.tensor<[D, F], bf16>, !stage.tensor<[D, F], f32>,
          !stage.tensor<[D, F], f32>, !stage.tensor<[D, F], f32>
    ```
  }];
  let arguments = (ins Stage_OptimizerKind:$kind, Stage_Tensor:$weight,
                       Stage_Tensor:$grad, Optional<Stage_Tensor>:$master,
                       Optional<Stage_Tensor>:$exp_avg,
                       Optional<Stage_Tensor>:$exp_avg_sq);
  let assemblyFormat = [{
    $kind $weight `,` $grad (`master` $master^)?
    (`moments` $exp_avg^ `,` $exp_avg_sq)? attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// FLOPs per updated element.
    int64_t getFlopsPerElement();
  }];
}

//===----------------------------------------------------------------------===//
// Pipeline parallelism
//===----------------------------------------------------------------------===//

def Stage_ScheduleKind : I32EnumAttr<"ScheduleKind", "pipeline schedule", [
    I32EnumAttrCase<"gpipe", 0>, I32EnumAttrCase<"one_f_one_b", 1, "1f1b">,
    I32EnumAttrCase<"interleaved", 2>, I32EnumAttrCase<"zb_h1", 3, "zb-h1">,
    I32EnumAttrCase<"zb_v", 4, "zb-v">,
    I32EnumAttrCase<"dualpipe_v", 5, "dualpipe-v">,
    I32EnumAttrCase<"dualpipe", 6>]> {
  let cppNamespace = "::mlir::stage";
}

def Stage_PipelineStageOp : Stage_Op<"pipeline_stage", [IsolatedFromAbove,
    SingleBlock, HasParent<"PipelineOp">]> {
  let summary = "one (virtual) stage of a pipeline: its weights and layers";
  let description = [{
    A self-contained program: the weights of the stage's layers
    (`layers` is the range `[begin, end)` of the model's decoder layers), the
    micro-batch loop of its forward and backward with the sends and receives
    to the neighbouring stages, and the stage's optimizer steps.

    ```mlir
    stage.pipeline_stage 1 layers [16, 32] {
      %h = stage.recv on @grid [pp] shift -1 channel 0 : !stage.tensor<[B, S, D], bf16>
      ...
      stage.yield
    }
    ```
  }];
  let arguments = (ins I64Attr:$index, DenseI64ArrayAttr:$layers);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$index `layers` $layers attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Stage_PipelineOp : Stage_Op<"pipeline", [SingleBlock, NoTerminator]> {
  let summary = "the stages of a pipeline and the schedule that runs them";
  let description = [{
    Holds one `stage.pipeline_stage` per virtual stage, in order. Virtual
    stage `j` runs on the ranks whose `pp` coordinate is `j mod pp`, where
    `pp` is the number of stages divided by `virtual_stages`, except under
    the V-shaped `zb-v`, `dualpipe-v` and `dualpipe` schedules (two virtual
    stages per rank): there stage `j < pp` runs on `j` and stage `j >= pp` on
    `2 pp - 1 - j`. Under `dualpipe` the stages `pp + j` are a mirrored
    copy of the stages `j` (the same layers, their own copy of the weights,
    the messages going the other way) that runs the second half of the
    micro-batches, fed from the last rank. The schedule
    orders the forward and backward micro-batch steps of every stage; the
    trace emitter expands it, nothing is unrolled here. The stages hold
    consecutive ranges of the model's layers (layer stack iterations) from
    0; `layers`, where given (stage-pipeline gives it), is their count, at
    which the last range ends.

    ```mlir
    stage.pipeline schedule 1f1b virtual_stages 1 layers 32 {
      stage.pipeline_stage 0 layers [0, 16] { ... }
      stage.pipeline_stage 1 layers [16, 32] { ... }
    }
    ```
  }];
  let arguments = (ins Stage_ScheduleKind:$schedule, I64Attr:$virtual_stages,
                       OptionalAttr<I64Attr>:$num_layers);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `schedule` $schedule `virtual_stages` $virtual_stages
    (`layers` $num_layers^)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// Physical stages: ranks along the pp axis.
    int64_t getNumPhysicalStages();
    /// The physical stage that runs virtual stage `chunk`.
    int64_t getPhysicalStage(int64_t chunk);
  }];
}
