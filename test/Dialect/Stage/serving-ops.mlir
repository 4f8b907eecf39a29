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

// -----

// A serving recurrence carries its state in a cache; a ring cache of a
// sliding window reads its W positions.
// CHECK-LABEL: func.func @carried_state
// CHECK: stage.conv1d %{{.*}}, %{{.*}} state "layers.mixer.conv1d.state" :
// CHECK: stage.ssm_scan {{.*}} chunk <Q> state "layers.mixer.ssm_state" :
// CHECK: stage.cache_write {{.*}} offset S + i window <W> :
func.func @carried_state(%x: !stage.tensor<[B, 1, Hm, P], bf16>, %w: !stage.tensor<[Hm, P, Kc], bf16>, %dt: !stage.tensor<[B, 1, Hm], bf16>, %a: !stage.tensor<[Hm], bf16>, %b: !stage.tensor<[B, 1, G, Ns], bf16>, %k: !stage.tensor<[B, 1, KV, Dh], bf16>) -> !stage.tensor<[B, 1, Hm, P], bf16> {
  %c = stage.conv1d %x, %w state "layers.mixer.conv1d.state" : (!stage.tensor<[B, 1, Hm, P], bf16>, !stage.tensor<[Hm, P, Kc], bf16>) -> !stage.tensor<[B, 1, Hm, P], bf16>
  %y = stage.ssm_scan %c, %dt, %a, %b, %b, %a chunk <Q> state "layers.mixer.ssm_state" : (!stage.tensor<[B, 1, Hm, P], bf16>, !stage.tensor<[B, 1, Hm], bf16>, !stage.tensor<[Hm], bf16>, !stage.tensor<[B, 1, G, Ns], bf16>, !stage.tensor<[B, 1, G, Ns], bf16>, !stage.tensor<[Hm], bf16>) -> !stage.tensor<[B, 1, Hm, P], bf16>
  %v = stage.cache_write %k into "layers.self_attn.k" dim 1 offset S + i window <W> : !stage.tensor<[B, 1, KV, Dh], bf16> -> !stage.tensor<[B, W, KV, Dh], bf16>
  return %y : !stage.tensor<[B, 1, Hm, P], bf16>
}
