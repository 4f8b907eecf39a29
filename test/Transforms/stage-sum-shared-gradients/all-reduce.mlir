// A weight with a copy on every rank of a pipeline of three or more is
// all-reduced over pp; one that some ranks hold is exchanged among them,
// the shifts the nearer way round the ring (stage 0 to stage 2 of three
// is -1). Every stage issues its shared sums in the weights' order.
//
// RUN: stage-opt %s --stage-sum-shared-gradients | FileCheck %s

// CHECK-LABEL: stage.pipeline_stage 0
// CHECK:      %[[A:.*]] = stage.all_reduce %{{.*}} on @grid [pp] : !stage.tensor<[D], f32>
// CHECK-NEXT: stage.optimizer_step sgd %{{.*}}, %[[A]] : !stage.tensor<[D], f32>
// CHECK-NEXT: stage.send %{{.*}} on @grid [pp] shift -1 channel 0 : !stage.tensor<[V], f32>
// CHECK-NEXT: stage.recv on @grid [pp] shift -1 channel 1 : !stage.tensor<[V], f32>
// CHECK-LABEL: stage.pipeline_stage 1
// CHECK:      stage.all_reduce %{{.*}} on @grid [pp] : !stage.tensor<[D], f32>
// CHECK-NOT:  stage.send
// CHECK-LABEL: stage.pipeline_stage 2
// CHECK:      stage.all_reduce %{{.*}} on @grid [pp] : !stage.tensor<[D], f32>
// CHECK:      stage.send %{{.*}} on @grid [pp] shift 1 channel 1 : !stage.tensor<[V], f32>
// CHECK-NEXT: stage.recv on @grid [pp] shift 1 channel 0 : !stage.tensor<[V], f32>

module {
  stage.grid @grid [pp]
  func.func @step() {
    stage.pipeline schedule "1f1b" virtual_stages 1 {
      stage.pipeline_stage 0 layers [0, 1] {
        %e = stage.param "embed" {stage.held_by = array<i64: 0, 2>} : !stage.tensor<[V], f32>
        %ge = stage.input "ge" : !stage.tensor<[V], f32>
        stage.optimizer_step sgd %e, %ge : !stage.tensor<[V], f32>, !stage.tensor<[V], f32>
        %w = stage.param "block" {stage.held_by = array<i64: 0, 1, 2>} : !stage.tensor<[D], f32>
        %g = stage.input "g" : !stage.tensor<[D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[D], f32>, !stage.tensor<[D], f32>
        stage.yield
      }
      stage.pipeline_stage 1 layers [1, 2] {
        %w = stage.param "block" {stage.held_by = array<i64: 0, 1, 2>} : !stage.tensor<[D], f32>
        %g = stage.input "g" : !stage.tensor<[D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[D], f32>, !stage.tensor<[D], f32>
        stage.yield
      }
      stage.pipeline_stage 2 layers [2, 3] {
        %w = stage.param "block" {stage.held_by = array<i64: 0, 1, 2>} : !stage.tensor<[D], f32>
        %g = stage.input "g" : !stage.tensor<[D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[D], f32>, !stage.tensor<[D], f32>
        %e = stage.param "embed" {stage.held_by = array<i64: 0, 2>} : !stage.tensor<[V], f32>
        %ge = stage.input "ge" : !stage.tensor<[V], f32>
        stage.optimizer_step sgd %e, %ge : !stage.tensor<[V], f32>, !stage.tensor<[V], f32>
        stage.yield
      }
    }
    return
  }
}
