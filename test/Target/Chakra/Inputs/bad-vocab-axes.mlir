// A vocabulary-parallel loss over an axis the grid does not have (errors.test).
module attributes {stage.bindings = {B = 8, S = 16, V = 64, tp = 2}} {
  stage.grid @grid [tp]
  func.func @f() {
    %l = stage.input "logits" : !stage.tensor<[B, S, V], bf16>
    %y = stage.input "labels" : !stage.tensor<[B, S], i32>
    %0 = stage.cross_entropy %l, %y {stage.vocab_parallel = ["sp"]} : (!stage.tensor<[B, S, V], bf16>, !stage.tensor<[B, S], i32>) -> !stage.tensor<[], f32>
    return
  }
}
