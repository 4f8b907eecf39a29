// DualPipe's two copies of a stage train on different halves of the
// micro-batches: before each update the gradient goes to the rank holding
// the other copy (stage j on rank j, its copy, stage pp + j, on rank
// pp - 1 - j) and the one received is added. Here pp = 2: stage 0 (rank 0)
// pairs with stage 2 (rank 1), stage 1 (rank 1) with stage 3 (rank 0); each
// pair uses two channels of its own, one per direction.
//
// RUN: stage-opt %s --stage-sum-mirrored-gradients | FileCheck %s

// CHECK-LABEL: stage.pipeline_stage 0
// CHECK:      %[[W:.*]] = stage.param "w"
// CHECK:      %[[G:.*]] = stage.input "g"
// CHECK-NEXT: stage.send %[[G]] on @grid [pp] shift 1 channel 0 : !stage.tensor<[D], f32>
// CHECK-NEXT: %[[R:.*]] = stage.recv on @grid [pp] shift 1 channel 1 : !stage.tensor<[D], f32>
// CHECK-NEXT: %[[S:.*]] = stage.ewise add %[[G]], %[[R]]
// CHECK-NEXT: stage.optimizer_step sgd %[[W]], %[[S]]
// CHECK-LABEL: stage.pipeline_stage 1
// CHECK:      stage.send {{.*}} shift -1 channel 2 : !stage.tensor<[F], f32>
// CHECK-NEXT: stage.recv on @grid [pp] shift -1 channel 3 : !stage.tensor<[F], f32>
// CHECK-LABEL: stage.pipeline_stage 2
// CHECK:      stage.send {{.*}} shift -1 channel 1 : !stage.tensor<[D], f32>
// CHECK-NEXT: stage.recv on @grid [pp] shift -1 channel 0 : !stage.tensor<[D], f32>
// CHECK-LABEL: stage.pipeline_stage 3
// CHECK:      stage.send {{.*}} shift 1 channel 3 : !stage.tensor<[F], f32>
// CHECK-NEXT: stage.recv on @grid [pp] shift 1 channel 2 : !stage.tensor<[F], f32>

module {
  stage.grid @grid [pp]
  func.func @step() {
    stage.pipeline schedule dualpipe virtual_stages 2 {
      stage.pipeline_stage 0 layers [0, 1] {
        %w = stage.param "w" : !stage.tensor<[D], f32>
        %g = stage.input "g" : !stage.tensor<[D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[D], f32>, !stage.tensor<[D], f32>
        stage.yield
      }
      stage.pipeline_stage 1 layers [1, 2] {
        %w = stage.param "v" : !stage.tensor<[F], f32>
        %g = stage.input "g" : !stage.tensor<[F], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[F], f32>, !stage.tensor<[F], f32>
        stage.yield
      }
      stage.pipeline_stage 2 layers [0, 1] {
        %w = stage.param "w" : !stage.tensor<[D], f32>
        %g = stage.input "g" : !stage.tensor<[D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[D], f32>, !stage.tensor<[D], f32>
        stage.yield
      }
      stage.pipeline_stage 3 layers [1, 2] {
        %w = stage.param "v" : !stage.tensor<[F], f32>
        %g = stage.input "g" : !stage.tensor<[F], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[F], f32>, !stage.tensor<[F], f32>
        stage.yield
      }
    }
    return
  }
}
