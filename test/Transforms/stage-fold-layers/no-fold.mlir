// Graphs that are not a stack of identical layers stay as they are.
//
// RUN: stage-opt %s --split-input-file --stage-fold-layers | FileCheck %s
// RUN: not stage-opt %s --split-input-file --stage-fold-layers="min-layers=1" 2>&1 | FileCheck %s --check-prefix=MIN
// MIN: error: stage-fold-layers: min-layers must be at least 2, got 1

// CHECK-LABEL: func.func @folds
// CHECK: stage.repeat L
module attributes {stage.bindings = {B = 8, D = 64}} {
  func.func @folds() -> !stage.tensor<[B, D], bf16> {
    %h0 = stage.input "x" : !stage.tensor<[B, D], bf16>
    %w0 = stage.param "h.0.w" : !stage.tensor<[D, D], bf16>
    %w1 = stage.param "h.1.w" : !stage.tensor<[D, D], bf16>
    %w2 = stage.param "h.2.w" : !stage.tensor<[D, D], bf16>
    %z0 = stage.einsum "bd,de->be" %h0, %w0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h1 = stage.ewise add %h0, %z0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z1 = stage.einsum "bd,de->be" %h1, %w1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h2 = stage.ewise add %h1, %z1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z2 = stage.einsum "bd,de->be" %h2, %w2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h3 = stage.ewise add %h2, %z2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    return %h3 : !stage.tensor<[B, D], bf16>
  }
}

// -----

// The middle layer differs (a gelu): no two consecutive layers are alike.
// CHECK-LABEL: func.func @different
// CHECK-NOT: stage.repeat
module attributes {stage.bindings = {B = 8, D = 64}} {
  func.func @different() -> !stage.tensor<[B, D], bf16> {
    %h0 = stage.input "x" : !stage.tensor<[B, D], bf16>
    %w0 = stage.param "h.0.w" : !stage.tensor<[D, D], bf16>
    %w1 = stage.param "h.1.w" : !stage.tensor<[D, D], bf16>
    %w2 = stage.param "h.2.w" : !stage.tensor<[D, D], bf16>
    %z0 = stage.einsum "bd,de->be" %h0, %w0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h1 = stage.ewise add %h0, %z0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z1 = stage.einsum "bd,de->be" %h1, %w1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %g = stage.ewise gelu %z1 : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h2 = stage.ewise add %h1, %g : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z2 = stage.einsum "bd,de->be" %h2, %w2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h3 = stage.ewise add %h2, %z2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    return %h3 : !stage.tensor<[B, D], bf16>
  }
}

// -----

// The first layer's output is used after the run, so only the last two
// layers fold, with that output as the initial value; their weights are
// the layer range 1:3.
// CHECK-LABEL: func.func @escapes
// CHECK:       stage.param "h.0.w"
// CHECK:       %[[H1:.*]] = stage.ewise add
// CHECK:       stage.param "h[1:3].w" : !stage.tensor<[L, D, D], bf16>
// CHECK:       %[[OUT:.*]] = stage.repeat L carry(%{{.*}} = %[[H1]]
// CHECK:       stage.ewise add %[[OUT]], %[[H1]]
module attributes {stage.bindings = {B = 8, D = 64}} {
  func.func @escapes() -> !stage.tensor<[B, D], bf16> {
    %h0 = stage.input "x" : !stage.tensor<[B, D], bf16>
    %w0 = stage.param "h.0.w" : !stage.tensor<[D, D], bf16>
    %w1 = stage.param "h.1.w" : !stage.tensor<[D, D], bf16>
    %w2 = stage.param "h.2.w" : !stage.tensor<[D, D], bf16>
    %z0 = stage.einsum "bd,de->be" %h0, %w0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h1 = stage.ewise add %h0, %z0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z1 = stage.einsum "bd,de->be" %h1, %w1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h2 = stage.ewise add %h1, %z1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z2 = stage.einsum "bd,de->be" %h2, %w2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h3 = stage.ewise add %h2, %z2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %s = stage.ewise add %h3, %h1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    return %s : !stage.tensor<[B, D], bf16>
  }
}

// -----

// Layers without weights of their own.
// CHECK-LABEL: func.func @shared
// CHECK-NOT: stage.repeat
module attributes {stage.bindings = {B = 8, D = 64}} {
  func.func @shared() -> !stage.tensor<[B, D], bf16> {
    %h0 = stage.input "x" : !stage.tensor<[B, D], bf16>
    %w0 = stage.param "h.0.w" : !stage.tensor<[D, D], bf16>
    %w1 = stage.param "h.1.w" : !stage.tensor<[D, D], bf16>
    %w2 = stage.param "h.2.w" : !stage.tensor<[D, D], bf16>
    %z0 = stage.einsum "bd,de->be" %h0, %w0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h1 = stage.ewise add %h0, %z0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z1 = stage.einsum "bd,de->be" %h1, %w0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h2 = stage.ewise add %h1, %z1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z2 = stage.einsum "bd,de->be" %h2, %w0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h3 = stage.ewise add %h2, %z2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    return %h3 : !stage.tensor<[B, D], bf16>
  }
}

// -----

// One layer.
// CHECK-LABEL: func.func @single
// CHECK-NOT: stage.repeat
module attributes {stage.bindings = {B = 8, D = 64}} {
  func.func @single() -> !stage.tensor<[B, D], bf16> {
    %h0 = stage.input "x" : !stage.tensor<[B, D], bf16>
    %w0 = stage.param "h.0.w" : !stage.tensor<[D, D], bf16>
    %w1 = stage.param "h.1.w" : !stage.tensor<[D, D], bf16>
    %w2 = stage.param "h.2.w" : !stage.tensor<[D, D], bf16>
    %z0 = stage.einsum "bd,de->be" %h0, %w0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h1 = stage.ewise add %h0, %z0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    return %h1 : !stage.tensor<[B, D], bf16>
  }
}
