// RUN: not stage-opt %s --stage-autodiff="micro-batches=7" 2>&1 | FileCheck %s --check-prefix=DIVIDE
// RUN: not stage-opt %s --stage-autodiff="optimizer=lamb" 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not stage-opt %s --stage-autodiff="precision=fp8" 2>&1 | FileCheck %s --check-prefix=PREC
// RUN: not stage-opt %s --stage-autodiff="micro-batches=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// An empty input (no function) is an error, not an empty training step.
// RUN: printf '' > %t.empty.mlir
// RUN: not stage-opt %t.empty.mlir --stage-train="dp=2" 2>&1 | FileCheck %s --check-prefix=EMPTY

// DIVIDE: error: stage-autodiff: micro-batches=7 does not divide the batch: B/M = 1536/7 is not an integer
// OPT: error: stage-autodiff: unknown optimizer 'lamb'; expected sgd, adam or adamw
// PREC: error: stage-autodiff: unknown precision 'fp8'; expected mixed or fp32
// ZERO: error: stage-autodiff: micro-batches must be at least 1, got 0
// EMPTY: error: stage-autodiff: the module has no function to train

module attributes {stage.bindings = {B = 1536}} {
  func.func @f(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16> {
    %w = stage.param "w" : !stage.tensor<[D, D], bf16>
    %y = stage.einsum "bd,de->be" %x, %w : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    return %y : !stage.tensor<[B, D], bf16>
  }
}
