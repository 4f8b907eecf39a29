// RUN: stage-opt %s --convert-linalg-to-stage="grid-axes=dp,tp" | FileCheck %s --check-prefix=IMPORT
// RUN: stage-opt %s --convert-linalg-to-stage="grid-axes=dp,tp" \
// RUN:   --stage-symbolize="B=8,D=64,F=256" --stage-train | FileCheck %s --check-prefix=TRAIN

// The shard grid's sizes become the degrees of the named stage axes, and
// each shard.shard of a weight its plan sharding. The plan here is not
// Megatron's: the second weight is split by its output columns, so the
// rules alone would give another layout. stage-train (with its degrees
// from the module) keeps the frontend's plan for the weight, its gradient
// and its optimizer states, and moves the activations to fit.

// IMPORT:      module attributes {stage.bindings = {dp = 2 : i64, tp = 4 : i64}}
// IMPORT:      stage.param "w1" {stage.plan_sharding = #stage.sharding<{{\[\[}}], [tp]]>} : !stage.tensor<[64, 256], bf16>
// IMPORT-NEXT: stage.param "w2" {stage.plan_sharding = #stage.sharding<{{\[\[}}], [tp]]>} : !stage.tensor<[256, 64], bf16>
// IMPORT-NOT:  shard.

// TRAIN:      dp = 2 : i64
// TRAIN-SAME: tp = 4 : i64
// TRAIN:      stage.param "w1" {{.*}}: !stage.tensor<[D, F/tp], bf16>
// TRAIN:      stage.param "w2" {{.*}}: !stage.tensor<[F, D/tp], bf16>
// TRAIN-NEXT: stage.param "w2" kind "master" {{.*}}: !stage.tensor<[F, D/tp], f32>
// TRAIN-NEXT: stage.param "w2" kind "exp_avg" {{.*}}: !stage.tensor<[F, D/tp], f32>
// TRAIN-NEXT: stage.param "w2" kind "exp_avg_sq" {{.*}}: !stage.tensor<[F, D/tp], f32>
// TRAIN:      stage.all_gather {{.*}} on @grid [tp] dim 1 : !stage.tensor<[B/dp, F/tp], bf16> -> !stage.tensor<[B/dp, F], bf16>
// TRAIN:      stage.all_gather {{.*}} on @grid [tp] dim 1 : !stage.tensor<[B/dp, D/tp], bf16> -> !stage.tensor<[B/dp, D], bf16>
// TRAIN:      } backward {
// TRAIN:      stage.all_reduce {{.*}} on @grid [dp] : !stage.tensor<[D, F/tp], bf16>
// TRAIN:      stage.all_reduce {{.*}} on @grid [dp] : !stage.tensor<[F, D/tp], bf16>
shard.grid @mesh(shape = 2x4)
func.func @mlp(%x: tensor<8x64xbf16> {stage.dims = ["B", "D"]},
               %w1: tensor<64x256xbf16> {stage.param = "w1"},
               %w2: tensor<256x64xbf16> {stage.param = "w2"}) -> tensor<8x64xbf16> {
  %zero = arith.constant 0.0 : bf16
  %s1 = shard.sharding @mesh split_axes = [[], [1]] : !shard.sharding
  %w1s = shard.shard %w1 to %s1 : tensor<64x256xbf16>
  %w2s = shard.shard %w2 to %s1 : tensor<256x64xbf16>
  %e1 = tensor.empty() : tensor<8x256xbf16>
  %z1 = linalg.fill ins(%zero : bf16) outs(%e1 : tensor<8x256xbf16>) -> tensor<8x256xbf16>
  %h = linalg.matmul ins(%x, %w1s : tensor<8x64xbf16>, tensor<64x256xbf16>) outs(%z1 : tensor<8x256xbf16>) -> tensor<8x256xbf16>
  %e2 = tensor.empty() : tensor<8x64xbf16>
  %z2 = linalg.fill ins(%zero : bf16) outs(%e2 : tensor<8x64xbf16>) -> tensor<8x64xbf16>
  %y = linalg.matmul ins(%h, %w2s : tensor<8x256xbf16>, tensor<256x64xbf16>) outs(%z2 : tensor<8x64xbf16>) -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}
