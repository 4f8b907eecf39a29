// RUN: stage-opt %s --split-input-file --verify-diagnostics --stage-symbolize="B=8,D=64,F=64,H=4,Dh=16"

// Two symbols of the same value and nothing to tell them apart.
func.func @ambiguous() -> !stage.tensor<[8, 64], bf16> {
  // expected-error @+1 {{dimension 1 (extent 64) could be any of D, F; name it with a 'stage.dims' annotation}}
  %x = stage.input "x" : !stage.tensor<[8, 64], bf16>
  %w = stage.param "w" : !stage.tensor<[64, 64], bf16>
  %y = stage.einsum "bd,df->bf" %x, %w : (!stage.tensor<[8, 64], bf16>, !stage.tensor<[64, 64], bf16>) -> !stage.tensor<[8, 64], bf16>
  return %y : !stage.tensor<[8, 64], bf16>
}

// -----

func.func @mismatch() -> !stage.tensor<[8, 64], bf16> {
  // expected-error @+1 {{names dimension 0 'H' = 4, but its extent is 8}}
  %x = stage.input "x" {stage.dims = ["H", "D"]} : !stage.tensor<[8, 64], bf16>
  return %x : !stage.tensor<[8, 64], bf16>
}

// -----

func.func @rank() -> !stage.tensor<[8, 64], bf16> {
  // expected-error @+1 {{has 1 names in 'stage.dims' for a rank-2 tensor}}
  %x = stage.input "x" {stage.dims = ["B"]} : !stage.tensor<[8, 64], bf16>
  return %x : !stage.tensor<[8, 64], bf16>
}

// -----

func.func @same_twice() -> !stage.tensor<[8, 64], bf16> {
  %x = stage.input "x" {stage.dims = ["B", "D"]} : !stage.tensor<[8, 64], bf16>
  // expected-error @+1 {{names dimension 0 'F', but it is the same dimension as one named 'D'}}
  %w = stage.param "w" {stage.dims = ["F", "D"]} : !stage.tensor<[64, 64], bf16>
  %y = stage.einsum "bd,df->bf" %x, %w : (!stage.tensor<[8, 64], bf16>, !stage.tensor<[64, 64], bf16>) -> !stage.tensor<[8, 64], bf16>
  return %y : !stage.tensor<[8, 64], bf16>
}

// -----

// D = H * Dh in value, but not as symbols.
func.func @heads() -> !stage.tensor<[8, 4, 16], bf16> {
  %x = stage.input "x" {stage.dims = ["B", "D"]} : !stage.tensor<[8, 64], bf16>
  // expected-error @+1 {{cannot be named consistently}}
  %r = stage.reshape %x : !stage.tensor<[8, 64], bf16> -> !stage.tensor<[8, 4, 16], bf16>
  return %r : !stage.tensor<[8, 4, 16], bf16>
}
