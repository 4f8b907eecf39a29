// RUN: stage-opt %s --stage-partition --split-input-file | FileCheck %s

// Each difference between what a value has and what its user needs becomes
// the one collective that resolves it, and every type becomes local.

module attributes {stage.bindings = {B = 8, D = 64, tp = 2, dp = 2}} {
  stage.grid @grid [dp, tp]
  // CHECK-LABEL: func.func @one_of_each()
  func.func @one_of_each() {
    // CHECK:      %[[X:.*]] = stage.input "x" : !stage.tensor<[B/tp, D], bf16>
    // CHECK-NEXT: %[[P:.*]] = stage.input "p" : !stage.tensor<[B, D], bf16>
    // CHECK-NEXT: %[[R:.*]] = stage.input "r" : !stage.tensor<[B, D], bf16>
    %x = stage.input "x" {stage.sharding = [#stage.sharding<[[tp], []]>]} : !stage.tensor<[B, D], bf16>
    %p = stage.input "p" {stage.sharding = [#stage.sharding<[[], []], partial = [tp]>]} : !stage.tensor<[B, D], bf16>
    %r = stage.input "r" {stage.sharding = [#stage.sharding<[[], []]>]} : !stage.tensor<[B, D], bf16>
    // A split the user does not have: gathered.
    // CHECK-NEXT: %[[G:.*]] = stage.all_gather %[[X]] on @grid [tp] dim 0 : !stage.tensor<[B/tp, D], bf16> -> !stage.tensor<[B, D], bf16>
    // CHECK-NEXT: stage.ewise relu %[[G]] : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %0 = stage.ewise relu %x {stage.operand_sharding = [#stage.sharding<[[], []]>], stage.sharding = [#stage.sharding<[[], []]>]} : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    // A pending sum needed whole: all-reduced.
    // CHECK-NEXT: %[[AR:.*]] = stage.all_reduce %[[P]] on @grid [tp] : !stage.tensor<[B, D], bf16>
    // CHECK-NEXT: stage.ewise relu %[[AR]]
    %1 = stage.ewise relu %p {stage.operand_sharding = [#stage.sharding<[[], []]>], stage.sharding = [#stage.sharding<[[], []]>]} : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    // A pending sum needed split by the same axis: reduce-scattered.
    // CHECK-NEXT: %[[RS:.*]] = stage.reduce_scatter %[[P]] on @grid [tp] dim 0 : !stage.tensor<[B, D], bf16> -> !stage.tensor<[B/tp, D], bf16>
    // CHECK-NEXT: stage.ewise relu %[[RS]] : (!stage.tensor<[B/tp, D], bf16>) -> !stage.tensor<[B/tp, D], bf16>
    %2 = stage.ewise relu %p {stage.operand_sharding = [#stage.sharding<[[tp], []]>], stage.sharding = [#stage.sharding<[[tp], []]>]} : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    // A split that moves to another dimension: all-to-all.
    // CHECK-NEXT: %[[A2A:.*]] = stage.all_to_all %[[X]] on @grid [tp] split 1 concat 0 : !stage.tensor<[B/tp, D], bf16> -> !stage.tensor<[B, D/tp], bf16>
    // CHECK-NEXT: stage.ewise relu %[[A2A]]
    %3 = stage.ewise relu %x {stage.operand_sharding = [#stage.sharding<[[], [tp]]>], stage.sharding = [#stage.sharding<[[], [tp]]>]} : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    // Splits the user adds: each rank keeps its piece, one op for the axes.
    // CHECK-NEXT: %[[LS:.*]] = stage.local_split %[[R]] on @grid [dp, tp] dim 0 : !stage.tensor<[B, D], bf16> -> !stage.tensor<[B/(dp*tp), D], bf16>
    // CHECK-NEXT: stage.ewise relu %[[LS]] : (!stage.tensor<[B/(dp*tp), D], bf16>)
    %4 = stage.ewise relu %r {stage.operand_sharding = [#stage.sharding<[[dp, tp], []]>], stage.sharding = [#stage.sharding<[[dp, tp], []]>]} : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    // CHECK-NEXT: return
    return
  }
}

// -----

// Data-parallel and model-parallel sums are separate all-reduces (as
// Megatron-LM issues them); a gather leaving over two axes is one
// collective over their combined group; the same reshard of a value in a
// block is made once.
module attributes {stage.bindings = {D = 64, F = 256, tp = 2, dp = 4}} {
  stage.grid @grid [dp, tp]
  // CHECK-LABEL: func.func @groups()
  func.func @groups() {
    // CHECK:      %[[G:.*]] = stage.input "g" : !stage.tensor<[D, F], bf16>
    // CHECK-NEXT: %[[W:.*]] = stage.input "w" : !stage.tensor<[D/(dp*tp), F], bf16>
    %g = stage.input "g" {stage.sharding = [#stage.sharding<[[], []], partial = [dp, tp]>]} : !stage.tensor<[D, F], bf16>
    %w = stage.input "w" {stage.sharding = [#stage.sharding<[[dp, tp], []]>]} : !stage.tensor<[D, F], bf16>
    // CHECK-NEXT: %[[S1:.*]] = stage.all_reduce %[[G]] on @grid [dp] : !stage.tensor<[D, F], bf16>
    // CHECK-NEXT: %[[S2:.*]] = stage.all_reduce %[[S1]] on @grid [tp] : !stage.tensor<[D, F], bf16>
    // CHECK-NEXT: stage.ewise neg %[[S2]]
    %0 = stage.ewise neg %g {stage.operand_sharding = [#stage.sharding<[[], []]>], stage.sharding = [#stage.sharding<[[], []]>]} : (!stage.tensor<[D, F], bf16>) -> !stage.tensor<[D, F], bf16>
    // CHECK-NEXT: %[[WG:.*]] = stage.all_gather %[[W]] on @grid [dp, tp] dim 0 : !stage.tensor<[D/(dp*tp), F], bf16> -> !stage.tensor<[D, F], bf16>
    // CHECK-NEXT: stage.ewise neg %[[WG]]
    // CHECK-NEXT: stage.ewise exp %[[WG]]
    // CHECK-NEXT: return
    %1 = stage.ewise neg %w {stage.operand_sharding = [#stage.sharding<[[], []]>], stage.sharding = [#stage.sharding<[[], []]>]} : (!stage.tensor<[D, F], bf16>) -> !stage.tensor<[D, F], bf16>
    %2 = stage.ewise exp %w {stage.operand_sharding = [#stage.sharding<[[], []]>], stage.sharding = [#stage.sharding<[[], []]>]} : (!stage.tensor<[D, F], bf16>) -> !stage.tensor<[D, F], bf16>
    return
  }
}

// -----

// Logits split along the vocabulary: the cross-entropy all-reduces its
// softmax statistics over the vocabulary's axes, which it records; logits
// whole along the vocabulary need nothing.
module attributes {stage.bindings = {B = 8, S = 16, V = 64, tp = 2}} {
  stage.grid @grid [tp]
  // CHECK-LABEL: func.func @vocab_parallel_loss()
  func.func @vocab_parallel_loss() {
    %l = stage.input "logits" {stage.sharding = [#stage.sharding<[[], [], [tp]]>]} : !stage.tensor<[B, S, V], bf16>
    %w = stage.input "whole" {stage.sharding = [#stage.sharding<[[], [], []]>]} : !stage.tensor<[B, S, V], bf16>
    %y = stage.input "labels" {stage.sharding = [#stage.sharding<[[], []]>]} : !stage.tensor<[B, S], i32>
    // CHECK: stage.cross_entropy %{{.*}}, %{{.*}} {stage.vocab_parallel = ["tp"]} : (!stage.tensor<[B, S, V/tp], bf16>
    %0 = stage.cross_entropy %l, %y {stage.operand_sharding = [#stage.sharding<[[], [], [tp]]>, #stage.sharding<[[], []]>], stage.sharding = [#stage.sharding<[]>]} : (!stage.tensor<[B, S, V], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[], f32>
    // CHECK: stage.cross_entropy %{{.*}}, %{{.*}} : (!stage.tensor<[B, S, V], bf16>
    %1 = stage.cross_entropy %w, %y {stage.operand_sharding = [#stage.sharding<[[], [], []]>, #stage.sharding<[[], []]>], stage.sharding = [#stage.sharding<[]>]} : (!stage.tensor<[B, S, V], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[], f32>
    return
  }
}
