// RUN: stage-opt %s --stage-autodiff --split-input-file -verify-diagnostics

func.func @backward_op_in_forward(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16> {
  %w = stage.param "w" : !stage.tensor<[B, D], bf16>
  // expected-error @+1 {{'stage.softmax_grad' op has no gradient rule (it is itself a backward op)}}
  %g = stage.softmax_grad %w, %x dim 1 : !stage.tensor<[B, D], bf16>
  return %g : !stage.tensor<[B, D], bf16>
}

// -----

stage.grid @grid [tp]
func.func @collective_in_forward() -> !stage.tensor<[B, D], bf16> {
  %w = stage.param "w" : !stage.tensor<[B, D], bf16>
  // expected-error @+1 {{'stage.all_reduce' op has no gradient rule}}
  %r = stage.all_reduce %w on @grid [tp] : !stage.tensor<[B, D], bf16>
  return %r : !stage.tensor<[B, D], bf16>
}

// -----

func.func @three_operands() -> !stage.tensor<[B], bf16> {
  %w = stage.param "w" : !stage.tensor<[B], bf16>
  // expected-error @+1 {{'stage.einsum' op with 3 operands has no gradient rule (only two-operand contractions)}}
  %y = stage.einsum "b,b,b->b" %w, %w, %w : (!stage.tensor<[B], bf16>, !stage.tensor<[B], bf16>, !stage.tensor<[B], bf16>) -> !stage.tensor<[B], bf16>
  return %y : !stage.tensor<[B], bf16>
}

// -----

func.func @no_weights(%x: !stage.tensor<[B], bf16>) -> !stage.tensor<[B], bf16> {
  %y = stage.ewise exp %x : (!stage.tensor<[B], bf16>) -> !stage.tensor<[B], bf16>
  // expected-error @+1 {{nothing to differentiate: the program has no loss, result or sent activation that depends on a weight}}
  return %y : !stage.tensor<[B], bf16>
}

// -----

func.func @trained() {
  %w = stage.param "w" : !stage.tensor<[B], bf16>
  // expected-error @+1 {{'stage.param' op is an optimizer state: the program is already a training step}}
  %m = stage.param "w" kind "exp_avg" : !stage.tensor<[B], f32>
  return
}
