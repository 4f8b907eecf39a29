//===- StageOps.td - Ops of the stage dialect ----------------*- tablegen -*-===//

#ifndef STAGE_OPS
#define STAGE_OPS

include "Stage/Dialect/Stage/IR/StageBase.td"
include "Stage/Dialect/Stage/IR/StageAttrs.td"
include "Stage/Dialect/Stage/IR/StageTypes.td"
include "Stage/Dialect/Stage/IR/StageInterfaces.td"
include "Stage/Dialect/Stage/Interfaces/ShardingRuleInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Stage_EwiseKind : I32EnumAttr<"EwiseKind", "elementwise operation", [
    I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"sub", 1>,
    I32EnumAttrCase<"mul", 2>, I32EnumAttrCase<"div", 3>,
    I32EnumAttrCase<"max", 4>, I32EnumAttrCase<"min", 5>,
    I32EnumAttrCase<"neg", 6>, I32EnumAttrCase<"exp", 7>,
    I32EnumAttrCase<"log", 8>, I32EnumAttrCase<"sqrt", 9>,
    I32EnumAttrCase<"rsqrt", 10>, I32EnumAttrCase<"tanh", 11>,
    I32EnumAttrCase<"sigmoid", 12>, I32EnumAttrCase<"silu", 13>,
    I32EnumAttrCase<"gelu", 14>, I32EnumAttrCase<"relu", 15>,
    I32EnumAttrCase<"square", 16>, I32EnumAttrCase<"reciprocal", 17>,
    I32EnumAttrCase<"copy", 18>, I32EnumAttrCase<"cast", 19>,
    I32EnumAttrCase<"select", 20>, I32EnumAttrCase<"generic", 21>,
    I32EnumAttrCase<"silu_grad", 22>, I32EnumAttrCase<"gelu_grad", 23>,
    I32EnumAttrCase<"sigmoid_grad", 24>, I32EnumAttrCase<"tanh_grad", 25>,
    I32EnumAttrCase<"relu_grad", 26>]> {
  let cppNamespace = "::mlir::stage";
}

def Stage_NormKind : I32EnumAttr<"NormKind", "normalization", [
    I32EnumAttrCase<"rms", 0>, I32EnumAttrCase<"layer", 1>]> {
  let cppNamespace = "::mlir::stage";
}

def Stage_ReduceKind : I32EnumAttr<"ReduceKind", "reduction", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"mean", 2>]> {
  let cppNamespace = "::mlir::stage";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// The C++ type stays ::mlir::Type so that formats print `!stage.tensor<...>`
// in full; cast with `cast<SymTensorType>` where the shape matters.
def Stage_Tensor : Type<CPred<"::llvm::isa<::mlir::stage::SymTensorType>($_self)">,
    "stage tensor", "::mlir::stage::SymTensorType">;

//===----------------------------------------------------------------------===//
// Grid
//===----------------------------------------------------------------------===//

def Stage_GridOp : Stage_Op<"grid", [Symbol]> {
  let summary = "the named axes of the device grid, outermost first";
  let description = [{
    Declares the parallel axes. The size of an axis is the symbol of the same
    name (`tp` is both the axis and its degree), bound like every other
    symbol. The order defines the rank numbering: the last axis varies
    fastest, so with `[pp, dp, cp, ep, tp]` tensor-parallel peers are
    adjacent ranks, as in Megatron-LM.

    ```mlir
    stage.grid @grid [pp, dp, cp, ep, tp]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axes);
  let assemblyFormat = "$sym_name custom<AxisList>($axes) attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::llvm::SmallVector<::std::string> getAxisNames();
    bool hasAxis(::llvm::StringRef name);
  }];
}

//===----------------------------------------------------------------------===//
// Values entering the graph
//===----------------------------------------------------------------------===//

def Stage_ParamKind : I32EnumAttr<"ParamKind", "what a parameter holds", [
    I32EnumAttrCase<"weight", 0>, I32EnumAttrCase<"master", 1>,
    I32EnumAttrCase<"exp_avg", 2>, I32EnumAttrCase<"exp_avg_sq", 3>,
    I32EnumAttrCase<"grad", 4>, I32EnumAttrCase<"buffer", 5>]> {
  let cppNamespace = "::mlir::stage";
}

def Stage_ParamOp : Stage_Op<"param", [Pure]> {
  let summary = "a weight (or optimizer state) of the model";
  let description = [{
    A tensor held in device memory across iterations, named by its logical
    name. Weights of a stack of identical layers have the layer count as
    their leading dimension and enter `stage.repeat` as slices. `kind` tells
    the optimizer states apart from the weights: `weight` (default),
    `master` (fp32 copy under mixed precision), `exp_avg`, `exp_avg_sq`,
    `grad`, and `buffer`: a constant held in memory but not trained (an
    imported graph's tensor constants, such as a causal mask). `group` says what the weight is for (`embedding`, `attention`,
    `mlp`, `norm`, `router`, `expert`); the parameter report counts by it.

    ```mlir
    %w = stage.param "layers.mlp.up_proj" group "mlp" : !stage.tensor<[L, D, F], bf16>
    %m = stage.param "layers.mlp.up_proj" kind "exp_avg" : !stage.tensor<[L, D, F], f32>
    ```
  }];
  let arguments = (ins StrAttr:$name,
                       DefaultValuedAttr<Stage_ParamKind, "ParamKind::weight">:$kind,
                       OptionalAttr<StrAttr>:$group);
  let results = (outs Stage_Tensor:$result);
  // `kind "master"`, absent for a weight.
  let assemblyFormat = [{
    $name `` custom<ParamKind>($kind) (`group` $group^)? attr-dict `:` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Stage_InputOp : Stage_Op<"input", [Pure]> {
  let summary = "a tensor fed to the step (tokens, labels, activations)";
  let description = [{
    ```mlir
    %tokens = stage.input "tokens" : !stage.tensor<[B, S], i32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` qualified(type($result))";
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

class Stage_ComputeOp<string mnemonic, list<Trait> traits = []>
    : Stage_Op<mnemonic, !listconcat(traits,
        [Pure, DeclareOpInterfaceMethods<Stage_CostOpInterface>,
         DeclareOpInterfaceMethods<Stage_AutodiffOpInterface>])>;

// A compute op that stage-shard splits by its sharding rule.
class Stage_ShardedOp<string mnemonic, list<Trait> traits = []>
    : Stage_ComputeOp<mnemonic, !listconcat(traits,
        [DeclareOpInterfaceMethods<Stage_ShardingRuleOpInterface>])>;

def Stage_EinsumOp : Stage_ShardedOp<"einsum"> {
  let summary = "a contraction in Einstein notation";
  let description = [{
    Every contraction of the model: projections, attention scores, experts.
    The spec names one index per dimension of each operand and of the
    result; an index absent from the result is summed over. Indices with the
    same letter have the same extent. FLOPs are `2 * (product of the extents
    of all indices)` for two operands.

    ```mlir
    %q = stage.einsum "bsd,dhk->bshk" %x, %wq
        : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, H, Dh], bf16>)
        -> !stage.tensor<[B, S, H, Dh], bf16>
    ```
  }];
  let arguments = (ins StrAttr:$spec, Variadic<Stage_Tensor>:$inputs);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $spec $inputs attr-dict `:` functional-type($inputs, $result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The index letters of each input and of the result.
    ::llvm::SmallVector<::std::string> getInputIndices();
    ::std::string getResultIndices();
    /// The extent of every index letter.
    ::std::map<char, ::sym::Expr> getIndexExtents();
    /// Indices summed over (in some input, not in the result).
    ::std::string getContractedIndices();
  }];
}

def Stage_EwiseOp : Stage_ShardedOp<"ewise"> {
  let summary = "an elementwise operation";
  let description = [{
    Applies `kind` elementwise. Operands have the result's shape or a suffix
    of it (trailing broadcast, as for a bias `[F]` added to `[B, S, F]`);
    rank-0 operands broadcast everywhere. `cast` converts the element type;
    `generic` stands for a body the frontends could not classify and counts
    `flops_per_element` (default 1).

    ```mlir
    %y = stage.ewise silu %x : (!stage.tensor<[B, S, F], bf16>) -> !stage.tensor<[B, S, F], bf16>
    %z = stage.ewise add %a, %bias : (!stage.tensor<[B, S, F], bf16>, !stage.tensor<[F], bf16>) -> !stage.tensor<[B, S, F], bf16>
    ```
  }];
  let arguments = (ins Stage_EwiseKind:$kind, Variadic<Stage_Tensor>:$inputs,
                       OptionalAttr<I64Attr>:$flops_per_element);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $kind $inputs attr-dict `:` functional-type($inputs, $result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// FLOPs per result element of `kind`.
    static int64_t getFlopsPerElement(EwiseKind kind);
    /// Number of operands `kind` takes (-1: any).
    static int getArity(EwiseKind kind);
  }];
}

def Stage_ReduceOp : Stage_ShardedOp<"reduce"> {
  let summary = "a reduction over some dimensions";
  let description = [{
    ```mlir
    %s = stage.reduce sum %x dims [2] : !stage.tensor<[B, S, D], f32> -> !stage.tensor<[B, S], f32>
    ```
  }];
  let arguments = (ins Stage_ReduceKind:$kind, Stage_Tensor:$input,
                       DenseI64ArrayAttr:$dims);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $kind $input `dims` $dims attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Stage_SoftmaxOp : Stage_ShardedOp<"softmax", [SameOperandsAndResultType]> {
  let summary = "softmax along one dimension";
  let description = [{
    ```mlir
    %p = stage.softmax %scores dim 3 : !stage.tensor<[B, H, S, S], f32>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input, I64Attr:$dim);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def Stage_NormOp : Stage_ShardedOp<"norm", [AttrSizedOperandSegments]> {
  let summary = "RMS or layer normalization over the last dimension";
  let description = [{
    Normalizes over the last dimension, then scales by `weight` and (layer
    norm) shifts by `bias`, both of the last dimension's extent.

    ```mlir
    %n = stage.norm rms %x weight %g
        : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, S, D], bf16>
    ```
  }];
  let arguments = (ins Stage_NormKind:$kind, Stage_Tensor:$input,
                       Optional<Stage_Tensor>:$weight,
                       Optional<Stage_Tensor>:$bias);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $kind $input (`weight` $weight^)? (`bias` $bias^)? attr-dict `:`
    functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Stage_RopeOp : Stage_ShardedOp<"rope", [SameOperandsAndResultType]> {
  let summary = "rotary position embedding over the last dimension";
  let description = [{
    Rotates pairs of the last dimension by position-dependent angles;
    `inverse` rotates back (the gradient).

    ```mlir
    %qr = stage.rope %q : !stage.tensor<[B, S, H, Dh], bf16>
    %dq = stage.rope %dqr inverse : !stage.tensor<[B, S, H, Dh], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input, UnitAttr:$inverse);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = "$input (`inverse` $inverse^)? attr-dict `:` qualified(type($result))";
}

def Stage_EmbeddingOp : Stage_ShardedOp<"embedding"> {
  let summary = "rows of a table selected by integer ids";
  let description = [{
    ```mlir
    %x = stage.embedding %table, %tokens
        : (!stage.tensor<[V, D], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[B, S, D], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$table, Stage_Tensor:$ids);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Stage_CrossEntropyOp : Stage_ShardedOp<"cross_entropy"> {
  let summary = "mean softmax cross-entropy of logits against labels";
  let description = [{
    The logits' last dimension is the vocabulary; the labels have the other
    dimensions. The result is the mean loss, a scalar.

    ```mlir
    %loss = stage.cross_entropy %logits, %labels
        : (!stage.tensor<[B, S, V], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[], f32>
    ```
  }];
  let arguments = (ins Stage_Tensor:$logits, Stage_Tensor:$labels);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Stage_AttentionOp : Stage_ShardedOp<"attention"> {
  let summary = "fused (flash) scaled dot-product attention";
  let description = [{
    `softmax(q k^T / sqrt(d)) v` in one kernel, layout `[batch, seq, heads,
    head_dim]`. With fewer key/value heads than query heads it is grouped-
    query attention; keys and values may have different head dims (as in
    multi-head latent attention). `causal` marks a causal mask; the FLOP
    count is that of the full score matrix either way (`docs/CostModel.md`).
    With `value_width W`, only the first `W` of the value's head dim are
    read (the absorbed form of multi-head latent attention, whose keys and
    values are one cached latent: the same operand).

    ```mlir
    %o = stage.attention %q, %k, %v causal
        : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>,
           !stage.tensor<[B, S, KV, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$query, Stage_Tensor:$key,
                       Stage_Tensor:$value, UnitAttr:$causal,
                       OptionalAttr<Stage_ExprAttr>:$value_width,
                       OptionalAttr<Stage_ExprAttr>:$window,
                       UnitAttr:$softcap);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`causal` $causal^)?
    (`value_width` $value_width^)? (`window` $window^)?
    (`softcap` $softcap^)? attr-dict `:`
    functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Stage_Conv1dOp : Stage_ShardedOp<"conv1d"> {
  let summary = "causal depthwise convolution along the sequence";
  let description = [{
    Each channel of `input` `[batch, seq, channels]` convolved with its own
    `K` taps of `weight` `[channels, K]` over the current and `K - 1`
    previous positions (Mamba's short convolution). `2 K` FLOPs per output
    element, on vector units. With `state`, the last `K - 1` positions of
    each channel carry over between calls in that cache (serving): read and
    written once per call.

    ```mlir
    %y = stage.conv1d %x, %w : (!stage.tensor<[B, S, Di], bf16>,
        !stage.tensor<[Di, Kc], bf16>) -> !stage.tensor<[B, S, Di], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input, Stage_Tensor:$weight,
                       OptionalAttr<StrAttr>:$state);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`state` $state^)? attr-dict `:`
    functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Stage_SsmScanOp : Stage_ShardedOp<"ssm_scan"> {
  let summary = "the selective state-space scan of a Mamba layer";
  let description = [{
    The recurrence `h_t = exp(dt_t A) h_t-1 + dt_t B_t x_t`,
    `y_t = C_t h_t + D x_t` over the sequence, with a state of `N` per
    channel, as Mamba's fused kernels compute it: `A = -exp(a)` from the
    layer's `A_log` and the skip `D x` inside the kernel. Two forms:

    - selective (Mamba): `x`, `dt` `[batch, seq, channels]`, `a`
      `[channels, N]`, `B`, `C` `[batch, seq, N]`, `D` `[channels]`; the
      result has `x`'s shape. 9 FLOPs per (token, channel, state) and 2 per
      (token, channel) for the skip, on vector units.
    - chunked (Mamba-2's SSD, with `chunk Q`): `x` `[batch, seq, heads, P]`,
      `dt` `[batch, seq, heads]`, `a` and `D` `[heads]`, `B`, `C` `[batch,
      seq, groups, N]`; heads share their group's `B` and `C`. Per token,
      the chunk's `C B^T` (2 Q N per group), its product with `x` (2 Q P
      per head), the chunk states and their read-out (4 N P per head), as
      matrix-unit FLOPs (docs/CostModel.md).
    - the delta rule (Gated DeltaNet, with `chunk Q` and `delta`): the
      chunked form's shapes with `B` the keys, `C` the queries, `x` the
      values and the last operand `beta` `[batch, seq, heads]`, how much
      each token overwrites: `S_t = exp(dt_t A) S_t-1 (I - beta_t k_t
      k_t^T) + beta_t x_t k_t^T`, `y_t = S_t q_t`, no skip. Per token and
      head, as the chunked kernels compute it (Yang et al. 2024): `K K^T`,
      the WY factors `W = T beta K` and `Q K^T` (6 Q N), `U = T beta x`
      and the masked product with `x` (4 Q P), and with the state `W S`,
      `Q S` and its update `K^T (U - W S)` (6 N P) on the matrix units; the
      triangular solve for `T` (2 Q^2 / 3), the decay mask (2 Q) and the
      scaling by `beta` (N + P) on the vector units.

    With `state`, the recurrence starts from and ends in the named cache
    (serving): its `N` values per channel are read and written once per
    call.

    ```mlir
    %y = stage.ssm_scan %x, %dt, %a, %b, %c, %d : (!stage.tensor<[B, S, Di], bf16>,
        !stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di, N], bf16>,
        !stage.tensor<[B, S, N], bf16>, !stage.tensor<[B, S, N], bf16>,
        !stage.tensor<[Di], bf16>) -> !stage.tensor<[B, S, Di], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input, Stage_Tensor:$dt, Stage_Tensor:$a,
                       Stage_Tensor:$b, Stage_Tensor:$c, Stage_Tensor:$d,
                       OptionalAttr<Stage_ExprAttr>:$chunk,
                       UnitAttr:$delta,
                       OptionalAttr<StrAttr>:$state);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $dt `,` $a `,` $b `,` $c `,` $d (`chunk` $chunk^)?
    (`delta` $delta^)? (`state` $state^)? attr-dict `:`
    functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Stage_ReshapeOp : Stage_ShardedOp<"reshape"> {
  let summary = "the same elements in another shape";
  let description = [{
    The element counts of operand and result must be equal as symbolic
    expressions.

    ```mlir
    %y = stage.reshape %x : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, S, H*Dh], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def Stage_TransposeOp : Stage_ShardedOp<"transpose"> {
  let summary = "a permutation of the dimensions";
  let description = [{
    Result dimension `i` is operand dimension `permutation[i]`.

    ```mlir
    %y = stage.transpose %x [0, 2, 1, 3] : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, H, S, Dh], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input $permutation attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Stage_SliceOp : Stage_ShardedOp<"slice"> {
  let summary = "a contiguous range of one dimension";
  let description = [{
    ```mlir
    %r = stage.slice %x dim 3 offset 0 size Dr
        : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, S, H, Dr], bf16>
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

def Stage_ConcatOp : Stage_ShardedOp<"concat"> {
  let summary = "operands joined along one dimension";
  let description = [{
    ```mlir
    %qk = stage.concat %a, %b dim 3
        : (!stage.tensor<[B, S, H, Dn], bf16>, !stage.tensor<[B, S, H, Dr], bf16>)
        -> !stage.tensor<[B, S, H, Dn + Dr], bf16>
    ```
  }];
  let arguments = (ins Variadic<Stage_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $inputs `dim` $dim attr-dict `:` functional-type($inputs, $result)
  }];
  let hasVerifier = 1;
}

def Stage_BroadcastOp : Stage_ShardedOp<"broadcast"> {
  let summary = "new dimensions by replication";
  let description = [{
    `dims` lists the result dimensions that are new; the others are the
    operand's, in order.

    ```mlir
    %y = stage.broadcast %x dims [0, 1] : !stage.tensor<[D], bf16> -> !stage.tensor<[B, S, D], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Stage_TopKOp : Stage_ShardedOp<"topk"> {
  let summary = "top-k gating: weights and expert ids per token";
  let description = [{
    Selects the `k` largest router scores of each token (last dimension: the
    experts) and returns their normalized weights and their indices.

    ```mlir
    %w, %ids = stage.topk %scores k K
        : !stage.tensor<[B, S, E], f32> -> !stage.tensor<[B, S, K], f32>, !stage.tensor<[B, S, K], i32>
    ```
  }];
  let arguments = (ins Stage_Tensor:$scores, Stage_ExprAttr:$k);
  let results = (outs Stage_Tensor:$weights, Stage_Tensor:$indices);
  let assemblyFormat = [{
    $scores `k` custom<SymExpr>($k) attr-dict `:` qualified(type($scores)) `->`
    qualified(type($weights)) `,` qualified(type($indices))
  }];
  let hasVerifier = 1;
}

def Stage_DispatchOp : Stage_ComputeOp<"dispatch"> {
  let summary = "tokens gathered into per-expert buffers";
  let description = [{
    Copies each token to the buffers of its `K` experts. The result is
    `[E, C, D]`: experts, tokens per expert, hidden. With balanced routing
    `C = tokens * K / E` (times a capacity factor).

    ```mlir
    %buf = stage.dispatch %x, %ids
        : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, K], i32>)
        -> !stage.tensor<[E, B*S*K/E, D], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input, Stage_Tensor:$indices);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $indices attr-dict `:` functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Stage_CombineOp : Stage_ComputeOp<"combine"> {
  let summary = "expert outputs summed back per token, weighted";
  let description = [{
    The inverse of `stage.dispatch`: each token's result is the sum of its
    `K` experts' outputs times their gate weights.

    ```mlir
    %y = stage.combine %out, %w, %ids
        : (!stage.tensor<[E, B*S*K/E, D], bf16>, !stage.tensor<[B, S, K], f32>,
           !stage.tensor<[B, S, K], i32>) -> !stage.tensor<[B, S, D], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input, Stage_Tensor:$weights,
                       Stage_Tensor:$indices);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weights `,` $indices attr-dict `:`
    functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def Stage_RepeatOp : Stage_Op<"repeat", [
    AttrSizedOperandSegments, RecursiveMemoryEffects,
    SingleBlock]> {
  let summary = "a region executed a symbolic number of times";
  let description = [{
    The body runs `count` times, in order (or in reverse with `reverse`).
    `carry` values flow from one iteration to the next; `slice` operands are
    stacks whose leading dimension is `count`, and iteration `i` sees slice
    `i` (the weights of layer `i`). The terminator yields the carried values,
    then one value per stacked result: result `j` stacks the yielded values of
    all iterations, with `count` as its new leading dimension. A decoder
    stack of any depth is one body. With `step "i"`, the body's shapes may
    use the symbol `i`, the iteration's index (0 to `count` - 1): a decode
    step whose context grows with `i`; carried values may not.

    ```mlir
    %h = stage.repeat L carry(%x = %emb : !stage.tensor<[B, S, D], bf16>)
        slice(%w = %wq : !stage.tensor<[L, D, H, Dh], bf16>) {
      ...
      stage.yield %next : !stage.tensor<[B, S, D], bf16>
    }
    ```
  }];
  let arguments = (ins Stage_ExprAttr:$count, UnitAttr:$reverse,
                       OptionalAttr<StrAttr>:$step,
                       Variadic<Stage_Tensor>:$inits,
                       Variadic<Stage_Tensor>:$slices);
  let results = (outs Variadic<Stage_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    unsigned getNumCarried() { return getInits().size(); }
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    ::mlir::Block::BlockArgListType getCarriedArgs() {
      return getBodyBlock().getArguments().take_front(getNumCarried());
    }
    ::mlir::Block::BlockArgListType getSliceArgs() {
      return getBodyBlock().getArguments().drop_front(getNumCarried());
    }
    ::mlir::ResultRange getCarriedResults() {
      return getResults().take_front(getNumCarried());
    }
    ::mlir::ResultRange getStackedResults() {
      return getResults().drop_front(getNumCarried());
    }
  }];
}

def Stage_YieldOp : Stage_Op<"yield", [Pure, Terminator,
    ParentOneOf<["RepeatOp", "MicrobatchesOp", "PipelineStageOp", "ServeOp"]>]> {
  let summary = "the values a region passes to its parent";
  let description = [{
    ```mlir
    stage.yield %h, %saved : !stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, D], bf16>
    ```
  }];
  let arguments = (ins Variadic<Stage_Tensor>:$values);
  let assemblyFormat = "($values^ `:` qualified(type($values)))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
}

include "Stage/Dialect/Stage/IR/StageTrainingOps.td"
include "Stage/Dialect/Stage/IR/StageInferenceOps.td"

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

// The grid a communication op runs on and the axes of its group.
defvar Stage_GridAxes = (ins FlatSymbolRefAttr:$grid, StrArrayAttr:$axes);

class Stage_CommOp<string mnemonic, list<Trait> traits = []>
    : Stage_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        DeclareOpInterfaceMethods<Stage_CollectiveOpInterface, ["getCommBytes"]>])> {
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verifySymbolUses(
        ::mlir::SymbolTableCollection &symbolTable) {
      return ::mlir::stage::verifyGridAxes(*this, getGridAttr(), getAxesAttr(),
                                           symbolTable);
    }
  }];
}

def Stage_AllReduceOp : Stage_CommOp<"all_reduce", [Pure, SameOperandsAndResultType]> {
  let summary = "sum over the group, result everywhere";
  let description = [{
    Resolves a value that is a partial sum over `axes`.

    ```mlir
    %y = stage.all_reduce %x on @grid [tp] : !stage.tensor<[B, S, D], bf16>
    ```
  }];
  let arguments = !con((ins Stage_Tensor:$input), Stage_GridAxes);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid custom<AxisList>($axes) attr-dict `:` qualified(type($result))
  }];
}

def Stage_AllGatherOp : Stage_CommOp<"all_gather", [Pure]> {
  let summary = "concatenation of every member's shard along one dimension";
  let description = [{
    The result's dimension `dim` is the operand's times the group size.

    ```mlir
    %y = stage.all_gather %x on @grid [tp] dim 1
        : !stage.tensor<[B, S/tp, D], bf16> -> !stage.tensor<[B, S, D], bf16>
    ```
  }];
  let arguments = !con((ins Stage_Tensor:$input), Stage_GridAxes,
                       (ins I64Attr:$dim));
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid custom<AxisList>($axes) `dim` $dim attr-dict `:`
    qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Stage_ReduceScatterOp : Stage_CommOp<"reduce_scatter", [Pure]> {
  let summary = "sum over the group, each member keeping one shard";
  let description = [{
    The result's dimension `dim` is the operand's divided by the group size.

    ```mlir
    %y = stage.reduce_scatter %x on @grid [tp] dim 1
        : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, S/tp, D], bf16>
    ```
  }];
  let arguments = !con((ins Stage_Tensor:$input), Stage_GridAxes,
                       (ins I64Attr:$dim));
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid custom<AxisList>($axes) `dim` $dim attr-dict `:`
    qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Stage_AllToAllOp : Stage_CommOp<"all_to_all", [Pure]> {
  let summary = "a shard of one dimension exchanged for a shard of another";
  let description = [{
    Splits dimension `split_dim` into group-size pieces, sends piece `j` to
    member `j`, and concatenates what it receives along `concat_dim`.

    ```mlir
    %y = stage.all_to_all %x on @grid [ep] split 0 concat 1
        : !stage.tensor<[E, C/ep, D], bf16> -> !stage.tensor<[E/ep, C, D], bf16>
    ```
  }];
  let arguments = !con((ins Stage_Tensor:$input), Stage_GridAxes,
                       (ins I64Attr:$split_dim, I64Attr:$concat_dim));
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid custom<AxisList>($axes) `split` $split_dim `concat`
    $concat_dim attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Stage_LocalSplitOp : Stage_CommOp<"local_split", [Pure]> {
  let summary = "this rank's shard of a replicated value (no communication)";
  let description = [{
    Every member already holds the whole value and keeps its own piece of
    dimension `dim`: a view, no data moves.

    ```mlir
    %y = stage.local_split %x on @grid [tp] dim 1
        : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, S/tp, D], bf16>
    ```
  }];
  let arguments = !con((ins Stage_Tensor:$input), Stage_GridAxes,
                       (ins I64Attr:$dim));
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid custom<AxisList>($axes) `dim` $dim attr-dict `:`
    qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Stage_SendOp : Stage_CommOp<"send"> {
  let summary = "a message to the rank `shift` steps along one axis";
  let description = [{
    The peer is the rank whose coordinate on the single axis is this rank's
    plus `shift`, modulo the axis size. `channel` pairs the send with the
    `stage.recv` of the peer that names the same channel. Shift 0, only
    between two stages of a pipeline that run on the same rank (the turn of
    a V-shaped schedule), hands the value over in memory: no message.

    ```mlir
    stage.send %h on @grid [pp] shift 1 channel 0 : !stage.tensor<[B, S, D], bf16>
    ```
  }];
  let arguments = !con((ins Stage_Tensor:$input), Stage_GridAxes,
                       (ins I64Attr:$shift, I64Attr:$channel));
  let assemblyFormat = [{
    $input `on` $grid custom<AxisList>($axes) `shift` $shift `channel` $channel
    attr-dict `:` qualified(type($input))
  }];
  let hasVerifier = 1;
}

def Stage_RecvOp : Stage_CommOp<"recv"> {
  let summary = "a message from the rank `shift` steps along one axis";
  let description = [{
    ```mlir
    %h = stage.recv on @grid [pp] shift -1 channel 0 : !stage.tensor<[B, S, D], bf16>
    ```
  }];
  let arguments = !con(Stage_GridAxes, (ins I64Attr:$shift, I64Attr:$channel));
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    `on` $grid custom<AxisList>($axes) `shift` $shift `channel` $channel
    attr-dict `:` qualified(type($result))
  }];
  let hasVerifier = 1;
}

#endif // STAGE_OPS
