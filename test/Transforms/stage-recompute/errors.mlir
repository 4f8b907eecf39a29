// RUN: not stage-opt %s --stage-recompute=policy=some 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not stage-opt %s --stage-autodiff --stage-recompute=policy=full 2>&1 | FileCheck %s --check-prefix=ORDER

// POLICY: error: stage-recompute: unknown policy 'some'; expected none, selective or full
// ORDER: error: stage-recompute must run before stage-autodiff

func.func @f(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16> {
  %w = stage.param "w" : !stage.tensor<[D, D], bf16>
  %y = stage.einsum "bd,de->be" %x, %w : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
  return %y : !stage.tensor<[B, D], bf16>
}
