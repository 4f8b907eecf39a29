// RUN: stage-opt %s -split-input-file | stage-opt -split-input-file | FileCheck %s
// RUN: stage-opt %s -split-input-file --mlir-print-op-generic | stage-opt -split-input-file | FileCheck %s

// The serving ops round-trip; the decode step's context grows with `i`.

// CHECK-LABEL: func.func @serve
// CHECK: stage.kv_cache "layers.k" : !stage.tensor<[L, B, S + N, KV, Dh], bf16>
// CHECK: stage.serve microbatches M prefill {
// CHECK:   stage.cache_write %{{.*}} into "layers.k" dim 1 offset 0 : !stage.tensor<[B/M, S, KV, Dh], bf16> -> !stage.tensor<[B/M, S, KV, Dh], bf16>
// CHECK: } decode {
// CHECK:   stage.repeat N step "i" carry(
// CHECK:     stage.cache_write %{{.*}} into "layers.k" dim 1 offset S + i : !stage.tensor<[B/M, 1, KV, Dh], bf16> -> !stage.tensor<[B/M, S + i + 1, KV, Dh], bf16>
func.func @serve() {
  %c = stage.kv_cache "layers.k" : !stage.tensor<[L, B, S + N, KV, Dh], bf16>
  stage.serve microbatches M prefill {
    %k = stage.input "k" : !stage.tensor<[B/M, S, KV, Dh], bf16>
    %v = stage.cache_write %k into "layers.k" dim 1 offset 0 : !stage.tensor<[B/M, S, KV, Dh], bf16> -> !stage.tensor<[B/M, S, KV, Dh], bf16>
    stage.yield
  } decode {
    %t = stage.input "token" : !stage.tensor<[B/M, 1], i32>
    %r = stage.repeat N step "i" carry(%a = %t : !stage.tensor<[B/M, 1], i32>) {
      %k = stage.input "k" : !stage.tensor<[B/M, 1, KV, Dh], bf16>
      %v = stage.cache_write %k into "layers.k" dim 1 offset S + i : !stage.tensor<[B/M, 1, KV, Dh], bf16> -> !stage.tensor<[B/M, S + i + 1, KV, Dh], bf16>
      stage.yield %a : !stage.tensor<[B/M, 1], i32>
    }
    stage.yield
  }
  return
}

// -----

// A prefill-only program: the decode region is empty.
// CHECK-LABEL: func.func @prefill_only
// CHECK: stage.serve microbatches 1 prefill {
// CHECK: } decode {
// CHECK-NEXT: }
func.func @prefill_only() {
  stage.serve microbatches 1 prefill {
    stage.yield
  } decode {
  }
  return
}

// A partitioned cache keeps its split; a disaggregated prefill hands over.
// CHECK-LABEL: func.func @handoff
// CHECK: stage.kv_cache "k" split <{{\[\[\], \[dp\], \[\], \[tp\], \[\]\]}}> : !stage.tensor<[L, B/dp, S, KV/tp, Dh], bf16>
// CHECK: stage.serve microbatches 1 handoff prefill {
func.func @handoff() {
  %c = stage.kv_cache "k" split <[[], [dp], [], [tp], []]> : !stage.tensor<[L, B/dp, S, KV/tp, Dh], bf16>
  stage.serve microbatches 1 handoff prefill {
    stage.yield
  } decode {
  }
  return
}
