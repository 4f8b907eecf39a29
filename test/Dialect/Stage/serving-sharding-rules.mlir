// RUN: stage-opt %s --test-stage-sharding-rules -o /dev/null 2>&1 | FileCheck %s

// Serving: a cache written from position 0 (a prompt) may keep its positions
// split; appended later, the positions stay whole. The absorbed latent
// attention reads one shared key/value head (its own factor, whole) and
// only part of the value's head dim (the result's own factor).
// CHECK-DAG: remark: stage.cache_write ([0, 1, 2, 3]) -> ([0, 1, 2, 3]) linear
// CHECK-DAG: remark: stage.cache_write ([0, 1, 2, 3]) -> ([0, 1, 2, 3]) frozen {1} linear
// CHECK-DAG: remark: stage.attention ([0, 1, 2, 3], [0, 4, 6, 3], [0, 4, 6, 5]) -> ([0, 1, 2, 7]) frozen {3, 4, 5, 6, 7} keep-split {0, 1, 2}

module attributes {stage.bindings = {B = 2, S = 4, H = 2, KV = 1, Dh = 4, Kr = 8, Dr = 2, i = 0}} {
func.func @f(%k: !stage.tensor<[B, S, KV, Dh], bf16>, %k1: !stage.tensor<[B, 1, KV, Dh], bf16>,
             %q: !stage.tensor<[B, 1, H, Kr + Dr], bf16>, %c: !stage.tensor<[B, 1, 1, Kr + Dr], bf16>) {
  %0 = stage.cache_write %k into "k" dim 1 offset 0 : !stage.tensor<[B, S, KV, Dh], bf16> -> !stage.tensor<[B, S, KV, Dh], bf16>
  %1 = stage.cache_write %k1 into "k" dim 1 offset S + i : !stage.tensor<[B, 1, KV, Dh], bf16> -> !stage.tensor<[B, S + i + 1, KV, Dh], bf16>
  %2 = stage.cache_write %c into "latent" dim 1 offset S + i : !stage.tensor<[B, 1, 1, Kr + Dr], bf16> -> !stage.tensor<[B, S + i + 1, 1, Kr + Dr], bf16>
  %3 = stage.attention %q, %2, %2 value_width <Kr> : (!stage.tensor<[B, 1, H, Kr + Dr], bf16>, !stage.tensor<[B, S + i + 1, 1, Kr + Dr], bf16>, !stage.tensor<[B, S + i + 1, 1, Kr + Dr], bf16>) -> !stage.tensor<[B, 1, H, Kr], bf16>
  return
}
}
