// A weight two stages hold (a tied embedding: the first stage's token
// table, the last stage's head) is summed before each copy's update: each
// holder sends its gradient to the other and adds the one it receives, on
// a channel per direction after those the pipeline uses (its channel 0: 1
// and 2 here).
// The shared updates move to the end of their stage; the others stay.
//
// RUN: stage-opt %s --stage-sum-shared-gradients | FileCheck %s

// CHECK-LABEL: stage.pipeline_stage 0
// CHECK:      %[[W:.*]] = stage.param "embed"
// CHECK:      %[[G:.*]] = stage.input "g"
// CHECK:      stage.optimizer_step sgd %{{.*}}, %{{.*}} : !stage.tensor<[F], f32>
// CHECK-NEXT: stage.send %[[G]] on @grid [pp] shift 1 channel 1 : !stage.tensor<[V, D], f32>
// CHECK-NEXT: %[[R:.*]] = stage.recv on @grid [pp] shift 1 channel 2 : !stage.tensor<[V, D], f32>
// CHECK-NEXT: %[[S:.*]] = stage.ewise add %[[G]], %[[R]]
// CHECK-NEXT: stage.optimizer_step sgd %[[W]], %[[S]]
// CHECK-NEXT: stage.yield
// CHECK-LABEL: stage.pipeline_stage 1
// CHECK:      stage.send %{{.*}} on @grid [pp] shift -1 channel 2 : !stage.tensor<[V, D], f32>
// CHECK-NEXT: stage.recv on @grid [pp] shift -1 channel 1 : !stage.tensor<[V, D], f32>
// CHECK-NEXT: stage.ewise add
// CHECK-NEXT: stage.optimizer_step sgd

module {
  stage.grid @grid [pp]
  func.func @step() {
    stage.pipeline schedule "1f1b" virtual_stages 1 {
      stage.pipeline_stage 0 layers [0, 1] {
        %w = stage.param "embed" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[V, D], f32>
        %g = stage.input "g" : !stage.tensor<[V, D], f32>
        %x = stage.input "x" : !stage.tensor<[B, D], f32>
        stage.send %x on @grid [pp] shift 1 channel 0 : !stage.tensor<[B, D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[V, D], f32>, !stage.tensor<[V, D], f32>
        %v = stage.param "mlp" : !stage.tensor<[F], f32>
        %h = stage.input "h" : !stage.tensor<[F], f32>
        stage.optimizer_step sgd %v, %h : !stage.tensor<[F], f32>, !stage.tensor<[F], f32>
        stage.yield
      }
      stage.pipeline_stage 1 layers [1, 2] {
        %x = stage.recv on @grid [pp] shift -1 channel 0 : !stage.tensor<[B, D], f32>
        %w = stage.param "embed" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[V, D], f32>
        %g = stage.input "g" : !stage.tensor<[V, D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[V, D], f32>, !stage.tensor<[V, D], f32>
        stage.yield
      }
    }
    return
  }
}
