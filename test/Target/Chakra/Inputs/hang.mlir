// Stage 1 receives on a channel stage 0 never sends on.
module attributes {stage.bindings = {B = 8, D = 64, pp = 2}} {
  stage.grid @grid [pp]
  func.func @step() {
    stage.pipeline schedule "1f1b" virtual_stages 1 {
      stage.pipeline_stage 0 layers [0, 1] {
        %x = stage.input "x" : !stage.tensor<[B, D], bf16>
        %y = stage.ewise relu %x : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
        stage.send %y on @grid [pp] shift 1 channel 0 : !stage.tensor<[B, D], bf16>
        stage.yield
      }
      stage.pipeline_stage 1 layers [1, 2] {
        %r = stage.recv on @grid [pp] shift -1 channel 2 : !stage.tensor<[B, D], bf16>
        %z = stage.ewise relu %r : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
        stage.yield
      }
    }
    return
  }
}
