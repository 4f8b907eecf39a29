// The copies of a stage must update the same weights, in the same order,
// with gradients of the same type; and the messages need the grid.
//
// RUN: stage-opt %s -split-input-file -verify-diagnostics --stage-sum-mirrored-gradients

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
        stage.yield
      }
      // expected-error @+1 {{updates 0 weights where its mirrored stage 0 updates 1}}
      stage.pipeline_stage 2 layers [0, 1] {
        stage.yield
      }
      stage.pipeline_stage 3 layers [1, 2] {
        stage.yield
      }
    }
    return
  }
}

// -----

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
        stage.yield
      }
      stage.pipeline_stage 2 layers [0, 1] {
        %w = stage.param "w" : !stage.tensor<[E], f32>
        %g = stage.input "g" : !stage.tensor<[E], f32>
        // expected-error @+1 {{updates a gradient of type '!stage.tensor<[E], f32>' where its mirrored copy has '!stage.tensor<[D], f32>'}}
        stage.optimizer_step sgd %w, %g : !stage.tensor<[E], f32>, !stage.tensor<[E], f32>
        stage.yield
      }
      stage.pipeline_stage 3 layers [1, 2] {
        stage.yield
      }
    }
    return
  }
}

// -----

module {
  func.func @step() {
    // expected-error @+1 {{needs the module's stage.grid}}
    stage.pipeline schedule dualpipe virtual_stages 2 {
      stage.pipeline_stage 0 layers [0, 1] {
        stage.yield
      }
      stage.pipeline_stage 1 layers [1, 2] {
        stage.yield
      }
      stage.pipeline_stage 2 layers [0, 1] {
        stage.yield
      }
      stage.pipeline_stage 3 layers [1, 2] {
        stage.yield
      }
    }
    return
  }
}
