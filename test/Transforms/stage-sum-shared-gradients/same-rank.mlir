// Copies on one rank: under zb-v with pp = 2 a tied embedding's first
// chunk (0) and last chunk (3) both run on rank 0. The rank's chunks
// update in order, so the earlier copy hands its gradient to the later one
// in memory (shift 0) and only the later one takes part in the sum; here
// no other rank holds the weight, so nothing crosses the network.
//
// Under DualPipe the mirrored stages hold copies too (pp = 2: stages 0 and
// 3 on rank 0, 1 and 2 on rank 1): each rank's last copy (3, 2) collects
// its rank's gradients, the two exchange theirs, and
// stage-sum-mirrored-gradients leaves the weight alone.
//
// RUN: stage-opt %s -split-input-file --stage-sum-shared-gradients --stage-sum-mirrored-gradients | FileCheck %s

// CHECK-LABEL: schedule "zb-v"
// CHECK-LABEL: stage.pipeline_stage 0
// CHECK:      stage.send %{{.*}} on @grid [pp] shift 0 channel 0 : !stage.tensor<[V, D], f32>
// CHECK-NEXT: stage.optimizer_step
// CHECK-LABEL: stage.pipeline_stage 3
// CHECK:      %[[R:.*]] = stage.recv on @grid [pp] shift 0 channel 0 : !stage.tensor<[V, D], f32>
// CHECK-NEXT: stage.ewise add %{{.*}}, %[[R]]
// CHECK-NEXT: stage.optimizer_step
// CHECK-NOT:  stage.send

module {
  stage.grid @grid [pp]
  func.func @step() {
    stage.pipeline schedule "zb-v" virtual_stages 2 {
      stage.pipeline_stage 0 layers [0, 1] {
        %w = stage.param "embed" {stage.held_by = array<i64: 0, 3>} : !stage.tensor<[V, D], f32>
        %g = stage.input "g" : !stage.tensor<[V, D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[V, D], f32>, !stage.tensor<[V, D], f32>
        stage.yield
      }
      stage.pipeline_stage 1 layers [1, 2] {
        stage.yield
      }
      stage.pipeline_stage 2 layers [2, 3] {
        stage.yield
      }
      stage.pipeline_stage 3 layers [3, 4] {
        %w = stage.param "embed" {stage.held_by = array<i64: 0, 3>} : !stage.tensor<[V, D], f32>
        %g = stage.input "g" : !stage.tensor<[V, D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[V, D], f32>, !stage.tensor<[V, D], f32>
        stage.yield
      }
    }
    return
  }
}

// -----

// CHECK-LABEL: schedule dualpipe
// CHECK-LABEL: stage.pipeline_stage 0
// CHECK:      stage.send %{{.*}} shift 0 channel 0 : !stage.tensor<[V, D], f32>
// CHECK-NEXT: stage.optimizer_step
// CHECK-LABEL: stage.pipeline_stage 1
// CHECK:      stage.send %{{.*}} shift 0 channel 1 : !stage.tensor<[V, D], f32>
// CHECK-NEXT: stage.optimizer_step
// CHECK-LABEL: stage.pipeline_stage 2
// CHECK:      stage.send %{{.*}} shift -1 channel 3 : !stage.tensor<[V, D], f32>
// CHECK-NEXT: %[[L:.*]] = stage.recv on @grid [pp] shift 0 channel 1
// CHECK-NEXT: %[[S:.*]] = stage.ewise add %{{.*}}, %[[L]]
// CHECK-NEXT: %[[R:.*]] = stage.recv on @grid [pp] shift -1 channel 2
// CHECK-NEXT: stage.ewise add %[[S]], %[[R]]
// CHECK-LABEL: stage.pipeline_stage 3
// CHECK:      stage.send %{{.*}} shift 1 channel 2 : !stage.tensor<[V, D], f32>
// CHECK-NEXT: stage.recv on @grid [pp] shift 0 channel 0
// CHECK-NEXT: stage.ewise add
// CHECK-NEXT: stage.recv on @grid [pp] shift 1 channel 3

module {
  stage.grid @grid [pp]
  func.func @step() {
    stage.pipeline schedule dualpipe virtual_stages 2 {
      stage.pipeline_stage 0 layers [0, 1] {
        %w = stage.param "embed" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[V, D], f32>
        %g = stage.input "g" : !stage.tensor<[V, D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[V, D], f32>, !stage.tensor<[V, D], f32>
        stage.yield
      }
      stage.pipeline_stage 1 layers [1, 2] {
        %w = stage.param "embed" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[V, D], f32>
        %g = stage.input "g" : !stage.tensor<[V, D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[V, D], f32>, !stage.tensor<[V, D], f32>
        stage.yield
      }
      stage.pipeline_stage 2 layers [0, 1] {
        %w = stage.param "embed" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[V, D], f32>
        %g = stage.input "g" : !stage.tensor<[V, D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[V, D], f32>, !stage.tensor<[V, D], f32>
        stage.yield
      }
      stage.pipeline_stage 3 layers [1, 2] {
        %w = stage.param "embed" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[V, D], f32>
        %g = stage.input "g" : !stage.tensor<[V, D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[V, D], f32>, !stage.tensor<[V, D], f32>
        stage.yield
      }
    }
    return
  }
}
