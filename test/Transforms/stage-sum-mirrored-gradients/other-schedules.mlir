// Other schedules keep one copy of each stage: nothing to sum.
//
// RUN: stage-opt %s --stage-sum-mirrored-gradients | FileCheck %s --implicit-check-not=stage.send --implicit-check-not=stage.recv

// CHECK: stage.optimizer_step sgd
module {
  stage.grid @grid [pp]
  func.func @step() {
    stage.pipeline schedule "dualpipe-v" virtual_stages 2 {
      stage.pipeline_stage 0 layers [0, 1] {
        %w = stage.param "w" : !stage.tensor<[D], f32>
        %g = stage.input "g" : !stage.tensor<[D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[D], f32>, !stage.tensor<[D], f32>
        stage.yield
      }
      stage.pipeline_stage 1 layers [1, 2] {
        stage.yield
      }
    }
    return
  }
}
