// The copies of a shared weight must list the same holders, include their
// own stage, each update it once, with gradients of one type; the
// messages need the grid.
//
// RUN: stage-opt %s -split-input-file -verify-diagnostics --stage-sum-shared-gradients

module {
  stage.grid @grid [pp]
  func.func @step() {
    stage.pipeline schedule "1f1b" virtual_stages 1 {
      stage.pipeline_stage 0 layers [0, 1] {
        // expected-error @+1 {{is held by stages that do not include its own (0)}}
        %w = stage.param "w" {stage.held_by = array<i64: 1, 2>} : !stage.tensor<[D], f32>
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

// -----

module {
  stage.grid @grid [pp]
  func.func @step() {
    stage.pipeline schedule "1f1b" virtual_stages 1 {
      stage.pipeline_stage 0 layers [0, 1] {
        %w = stage.param "w" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[D], f32>
        %g = stage.input "g" : !stage.tensor<[D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[D], f32>, !stage.tensor<[D], f32>
        stage.yield
      }
      stage.pipeline_stage 1 layers [1, 2] {
        // expected-error @+1 {{lists other holding stages than its copy in another stage}}
        %w = stage.param "w" {stage.held_by = array<i64: 0, 1, 2>} : !stage.tensor<[D], f32>
        %g = stage.input "g" : !stage.tensor<[D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[D], f32>, !stage.tensor<[D], f32>
        stage.yield
      }
      stage.pipeline_stage 2 layers [2, 3] {
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
    stage.pipeline schedule "1f1b" virtual_stages 1 {
      stage.pipeline_stage 0 layers [0, 1] {
        %w = stage.param "w" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[D], f32>
        %g = stage.input "g" : !stage.tensor<[D], f32>
        // expected-error @+1 {{updates 'w', which stage 1 holds too but does not update}}
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

// -----

module {
  stage.grid @grid [pp]
  func.func @step() {
    stage.pipeline schedule "1f1b" virtual_stages 1 {
      stage.pipeline_stage 0 layers [0, 1] {
        %w = stage.param "w" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[D], f32>
        %g = stage.input "g" : !stage.tensor<[D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[D], f32>, !stage.tensor<[D], f32>
        // expected-error @+1 {{updates 'w' a second time in stage 0}}
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

// -----

module {
  stage.grid @grid [pp]
  func.func @step() {
    stage.pipeline schedule "1f1b" virtual_stages 1 {
      stage.pipeline_stage 0 layers [0, 1] {
        %w = stage.param "w" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[D], f32>
        %g = stage.input "g" : !stage.tensor<[D], f32>
        stage.optimizer_step sgd %w, %g : !stage.tensor<[D], f32>, !stage.tensor<[D], f32>
        stage.yield
      }
      stage.pipeline_stage 1 layers [1, 2] {
        %w = stage.param "w" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[E], f32>
        %g = stage.input "g" : !stage.tensor<[E], f32>
        // expected-error @+1 {{updates a gradient of type '!stage.tensor<[E], f32>' where another copy has '!stage.tensor<[D], f32>'}}
        stage.optimizer_step sgd %w, %g : !stage.tensor<[E], f32>, !stage.tensor<[E], f32>
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
    stage.pipeline schedule "1f1b" virtual_stages 1 {
      stage.pipeline_stage 0 layers [0, 1] {
        stage.yield
      }
    }
    return
  }
}
