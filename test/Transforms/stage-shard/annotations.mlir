// RUN: stage-opt %s --stage-autodiff --stage-shard="tp=2 dp=2" | FileCheck %s

// stage-shard only annotates: each result gets the sharding it keeps, each
// op the shardings it needs of its operands. A Megatron MLP: the first
// weight split by columns (ffn on tp), the second by rows, so the hidden
// activation stays split; the output is naturally a pending sum over tp and,
// as the rest of the model reads it (stage.output), is kept whole. The batch
// is split over dp; the weight gradients are pending sums over dp (reduced
// once per iteration, after the micro-batches).

// CHECK:      stage.grid @grid [pp, dp, cp, ep, tp]
// CHECK:      stage.param "w1" group "mlp" {stage.sharding = [#stage.sharding<{{\[\[}}], [tp]]>]}
// CHECK:      stage.param "w1" kind "master" group "mlp" {stage.sharding = [#stage.sharding<{{\[\[}}], [tp]]>]}
// CHECK:      stage.param "w2" group "mlp" {stage.sharding = [#stage.sharding<{{\[\[}}tp], []]>]}
// CHECK:      stage.microbatches 1
// CHECK-SAME:   stage.arg_sharding = {{\[\[}}], [#stage.sharding<{{\[\[}}dp], [tp]]>, #stage.sharding<{{\[\[}}dp], [tp]]>, #stage.sharding<{{\[\[}}dp], []]>]]
// CHECK-SAME:   stage.sharding = [#stage.sharding<{{\[\[}}], [tp]], partial = [dp]>, #stage.sharding<{{\[\[}}tp], []], partial = [dp]>]
// CHECK:        stage.input "arg0" {stage.sharding = [#stage.sharding<{{\[\[}}dp], []]>]}
// CHECK-NEXT:   stage.einsum "bd,df->bf" {{.*}} {stage.operand_sharding = [#stage.sharding<{{\[\[}}dp], []]>, #stage.sharding<{{\[\[}}], [tp]]>], stage.sharding = [#stage.sharding<{{\[\[}}dp], [tp]]>]}
// CHECK-NEXT:   stage.ewise gelu {{.*}} {stage.operand_sharding = [#stage.sharding<{{\[\[}}dp], [tp]]>], stage.sharding = [#stage.sharding<{{\[\[}}dp], [tp]]>]}
// CHECK-NEXT:   stage.einsum "bf,fd->bd" {{.*}} {stage.natural_sharding = [#stage.sharding<{{\[\[}}dp], []], partial = [tp]>], stage.operand_sharding = [#stage.sharding<{{\[\[}}dp], [tp]]>, #stage.sharding<{{\[\[}}tp], []]>], stage.output, stage.sharding = [#stage.sharding<{{\[\[}}dp], []]>]}
// CHECK:      } backward {
// CHECK:        stage.input "seed.0" {stage.sharding = [#stage.sharding<{{\[\[}}dp], []]>]}
// CHECK-NEXT:   stage.einsum "bd,fd->bf" {{.*}} stage.sharding = [#stage.sharding<{{\[\[}}dp], [tp]]>]}
// CHECK-NEXT:   stage.einsum "bf,bd->fd" {{.*}} stage.sharding = [#stage.sharding<{{\[\[}}tp], []], partial = [dp]>]}
// CHECK-NEXT:   stage.ewise gelu_grad {{.*}} stage.sharding = [#stage.sharding<{{\[\[}}dp], [tp]]>]}
// CHECK-NEXT:   stage.einsum "bd,bf->df" {{.*}} stage.sharding = [#stage.sharding<{{\[\[}}], [tp]], partial = [dp]>]}
// CHECK:      stage.optimizer_step adamw {{.*}} {stage.operand_sharding = [#stage.sharding<{{\[\[}}], [tp]]>, #stage.sharding<{{\[\[}}], [tp]]>, #stage.sharding<{{\[\[}}], [tp]]>, #stage.sharding<{{\[\[}}], [tp]]>, #stage.sharding<{{\[\[}}], [tp]]>]}
// CHECK:      stage.optimizer_step adamw {{.*}} {stage.operand_sharding = [#stage.sharding<{{\[\[}}tp], []]>, #stage.sharding<{{\[\[}}tp], []]>, #stage.sharding<{{\[\[}}tp], []]>, #stage.sharding<{{\[\[}}tp], []]>, #stage.sharding<{{\[\[}}tp], []]>]}
module attributes {stage.bindings = {B = 8, D = 64, F = 256}} {
  func.func @mlp(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16> {
    %w1 = stage.param "w1" group "mlp" : !stage.tensor<[D, F], bf16>
    %w2 = stage.param "w2" group "mlp" : !stage.tensor<[F, D], bf16>
    %h = stage.einsum "bd,df->bf" %x, %w1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, F], bf16>
    %a = stage.ewise gelu %h : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
    %y = stage.einsum "bf,fd->bd" %a, %w2 : (!stage.tensor<[B, F], bf16>, !stage.tensor<[F, D], bf16>) -> !stage.tensor<[B, D], bf16>
    return %y : !stage.tensor<[B, D], bf16>
  }
}
