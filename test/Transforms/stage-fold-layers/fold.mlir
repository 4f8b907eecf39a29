// Three identical layers of a flat graph become one stage.repeat: each
// layer's weight a slice of a stacked parameter named without the layer
// index, the per-layer buffer defined inside each layer a stacked buffer,
// the mask every layer shares read from outside the body, the residual
// stream the one carried value. What comes before and after the run stays.
//
// RUN: stage-opt %s --stage-fold-layers | FileCheck %s

// CHECK:      module attributes {stage.bindings = {B = 8 : i64, D = 64 : i64, L = 3 : i64}}
// CHECK:        %[[X:.*]] = stage.input "x"
// CHECK-NEXT:   %[[E:.*]] = stage.param "embed"
// CHECK-NEXT:   %[[MASK:.*]] = stage.param "mask" kind "buffer" : !stage.tensor<[D], bf16>
// CHECK-NEXT:   %[[H0:.*]] = stage.einsum "bd,de->be" %[[X]], %[[E]]
// CHECK-NEXT:   %[[W:.*]] = stage.param "h.mlp.w" group "mlp" : !stage.tensor<[L, D, D], bf16>
// CHECK-NEXT:   %[[SCALE:.*]] = stage.param "h.scale" kind "buffer" : !stage.tensor<[L, D], bf16>
// CHECK-NEXT:   %[[OUT:.*]] = stage.repeat L carry(%[[H:.*]] = %[[H0]] : !stage.tensor<[B, D], bf16>) slice(%[[WI:.*]] = %[[W]] : !stage.tensor<[L, D, D], bf16>, %[[SI:.*]] = %[[SCALE]] : !stage.tensor<[L, D], bf16>) {
// CHECK-NEXT:     %[[Z:.*]] = stage.einsum "bd,de->be" %[[H]], %[[WI]]
// CHECK-NEXT:     %[[M:.*]] = stage.ewise mul %[[Z]], %[[MASK]]
// CHECK-NEXT:     %[[Q:.*]] = stage.ewise mul %[[M]], %[[SI]]
// CHECK-NEXT:     %[[R:.*]] = stage.ewise add %[[H]], %[[Q]]
// CHECK-NEXT:     stage.yield %[[R]] : !stage.tensor<[B, D], bf16>
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[Y:.*]] = stage.ewise gelu %[[OUT]]
// CHECK-NEXT:   return %[[Y]]
// CHECK-NOT:  stage.param "h.{{[0-9]}}

module attributes {stage.bindings = {B = 8, D = 64}} {
  func.func @flat() -> !stage.tensor<[B, D], bf16> {
    %x = stage.input "x" : !stage.tensor<[B, D], bf16>
    %e = stage.param "embed" : !stage.tensor<[D, D], bf16>
    %mask = stage.param "mask" kind "buffer" : !stage.tensor<[D], bf16>
    %w0 = stage.param "h.0.mlp.w" group "mlp" : !stage.tensor<[D, D], bf16>
    %w1 = stage.param "h.1.mlp.w" group "mlp" : !stage.tensor<[D, D], bf16>
    %w2 = stage.param "h.2.mlp.w" group "mlp" : !stage.tensor<[D, D], bf16>
    %h0 = stage.einsum "bd,de->be" %x, %e : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z0 = stage.einsum "bd,de->be" %h0, %w0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %m0 = stage.ewise mul %z0, %mask : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, D], bf16>
    %s0 = stage.param "h.0.scale" kind "buffer" : !stage.tensor<[D], bf16>
    %q0 = stage.ewise mul %m0, %s0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h1 = stage.ewise add %h0, %q0 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z1 = stage.einsum "bd,de->be" %h1, %w1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %m1 = stage.ewise mul %z1, %mask : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, D], bf16>
    %s1 = stage.param "h.1.scale" kind "buffer" : !stage.tensor<[D], bf16>
    %q1 = stage.ewise mul %m1, %s1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h2 = stage.ewise add %h1, %q1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z2 = stage.einsum "bd,de->be" %h2, %w2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %m2 = stage.ewise mul %z2, %mask : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, D], bf16>
    %s2 = stage.param "h.2.scale" kind "buffer" : !stage.tensor<[D], bf16>
    %q2 = stage.ewise mul %m2, %s2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h3 = stage.ewise add %h2, %q2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %y = stage.ewise gelu %h3 : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    return %y : !stage.tensor<[B, D], bf16>
  }
}
