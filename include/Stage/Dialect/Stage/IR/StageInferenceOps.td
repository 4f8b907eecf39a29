//===- StageInferenceOps.td - Serving ops ------------------*- tablegen -*-===//
//
// Included by StageOps.td: the ops stage-serve produces (the KV cache, the
// writes into it, the prefill and decode program of a serving batch).
//
//===----------------------------------------------------------------------===//

def Stage_KVCacheOp : Stage_Op<"kv_cache", [Pure]> {
  let summary = "the persistent key/value cache of a stack of layers";
  let description = [{
    Memory the rank holds for the whole serving run, like a weight: one
    entry per layer, request, cached position and cached head. Written by
    `stage.cache_write`, which names it.

    After partitioning, `split` keeps the grid axes that split each
    dimension (the type is then a rank's piece): which requests, positions
    and heads a rank holds, which a KV cache handed from a prefill group to
    a decode group needs to know.

    ```mlir
    %kc = stage.kv_cache "layers.self_attn.k" : !stage.tensor<[L, B, S + N, KV, Dh], bf16>
    %kl = stage.kv_cache "layers.self_attn.k" split <[[], [dp], [], [tp], []]>
        : !stage.tensor<[L, B/dp, S + N, KV/tp, Dh], bf16>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<Stage_ShardingAttr>:$split);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $name (`split` $split^)? attr-dict `:` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Stage_CacheWriteOp : Stage_ShardedOp<"cache_write"> {
  let summary = "new positions appended to a KV cache, and the cache so far";
  let description = [{
    Writes `input` (the keys or values of the new positions) into the cache
    `cache` at position `offset` along `dim`, and returns the cached
    positions `[0, offset + n)` as a view of the cache: what attention reads.
    Moves the new positions once (read and write); no FLOPs. With `window
    W` the cache is a ring of the last `W` positions (sliding-window
    attention) and the view is those `W` positions.

    ```mlir
    %k = stage.cache_write %knew into "layers.self_attn.k" dim 1 offset S + i
        : !stage.tensor<[B, 1, KV, Dh], bf16> -> !stage.tensor<[B, S + i + 1, KV, Dh], bf16>
    ```
  }];
  let arguments = (ins Stage_Tensor:$input, StrAttr:$cache, I64Attr:$dim,
                       Stage_ExprAttr:$offset,
                       OptionalAttr<Stage_ExprAttr>:$window);
  let results = (outs Stage_Tensor:$result);
  let assemblyFormat = [{
    $input `into` $cache `dim` $dim `offset` custom<SymExpr>($offset)
    (`window` $window^)? attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Stage_ServeOp : Stage_Op<"serve", [RecursiveMemoryEffects]> {
  let summary = "prefill and decode of a serving batch, micro-batch by micro-batch";
  let description = [{
    The batch of requests is split into `microbatches` groups. The
    `prefill` region runs the prompt of one group (writing its KV cache);
    the `decode` region holds the decode steps of one group: a
    `stage.repeat N step "i"` whose body is one step of one token per
    request at context `S + i + 1`. Every group's prefill runs first, then
    decode step `i` of every group in turn (a pipeline's stages work on
    different groups at once). Either region may be empty (a prefill-only
    or decode-only trace).

    With `handoff` (disaggregated serving: prefill and decode on separate
    rank groups), a prefill-only serve sends each group's KV cache to the
    decode group when its prefill ends, and a decode-only serve receives it
    before the group's first decode step.

    ```mlir
    stage.serve microbatches M prefill {
      ...
      stage.yield
    } decode {
      stage.repeat N step "i" carry(...) { ... }
      stage.yield
    }
    ```
  }];
  let arguments = (ins Stage_ExprAttr:$microbatches,
                       OptionalAttr<Stage_ExprAttr>:$chunk,
                       UnitAttr:$handoff);
  let regions = (region AnyRegion:$prefill, AnyRegion:$decode);
  let assemblyFormat = [{
    `microbatches` custom<SymExpr>($microbatches) (`chunk` $chunk^)?
    (`handoff` $handoff^)?
    attr-dict-with-keyword `prefill` $prefill `decode` $decode
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The decode steps' loop (its body is one step), if any.
    RepeatOp getDecodeLoop();
    /// The number of decode steps (0 without a decode region).
    ::sym::Expr getDecodeSteps();
  }];
}
