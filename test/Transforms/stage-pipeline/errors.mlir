// RUN: stage-opt %s --stage-pipeline="pp=2" --split-input-file --verify-diagnostics

// expected-error @below {{'func.func' op has no stage.repeat layer stack for stage-pipeline to split over 2 stages (an imported flat graph: fold its layers first with --stage-fold-layers)}}
func.func @no_layers(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16> {
  %w = stage.param "w" : !stage.tensor<[D, D], bf16>
  %y = stage.einsum "bd,de->be" %x, %w : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
  return %y : !stage.tensor<[B, D], bf16>
}

// -----

module attributes {stage.bindings = {B = 8, D = 64}} {
  func.func @computed_stack(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16> {
    %w = stage.param "w" : !stage.tensor<[4, D, D], bf16>
    %s = stage.ewise neg %w : (!stage.tensor<[4, D, D], bf16>) -> !stage.tensor<[4, D, D], bf16>
    // expected-error @below {{slices something else than a weight stack; stage-pipeline cannot split it}}
    %y = stage.repeat 4 carry(%h = %x : !stage.tensor<[B, D], bf16>) slice(%wi = %s : !stage.tensor<[4, D, D], bf16>) {
      %z = stage.einsum "bd,de->be" %h, %wi : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
      stage.yield %z : !stage.tensor<[B, D], bf16>
    }
    return %y : !stage.tensor<[B, D], bf16>
  }
}

// -----

module attributes {stage.bindings = {B = 8, D = 64}} {
  func.func @unbound_depth(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16> {
    %w = stage.param "w" : !stage.tensor<[L, D, D], bf16>
    // expected-error @below {{layer count: symbol 'L' is not bound in 'L'}}
    %y = stage.repeat L carry(%h = %x : !stage.tensor<[B, D], bf16>) slice(%wi = %w : !stage.tensor<[L, D, D], bf16>) {
      %z = stage.einsum "bd,de->be" %h, %wi : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
      stage.yield %z : !stage.tensor<[B, D], bf16>
    }
    return %y : !stage.tensor<[B, D], bf16>
  }
}
