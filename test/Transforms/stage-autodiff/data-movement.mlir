// RUN: stage-opt %s --stage-autodiff | FileCheck %s

// Views and copies: reshape back, inverse transpose, slice -> pad,
// concat -> slices, broadcast -> sum. Nothing needs to be kept.

// CHECK-LABEL: func.func @data_movement()
// CHECK:       stage.yield
// CHECK-NEXT:  } backward {
// CHECK-NEXT:    %[[D0:.*]] = stage.input "seed.0" : !stage.tensor<[D, B, S], bf16>
// CHECK-NEXT:    %[[D1:.*]] = stage.transpose %[[D0]] [1, 2, 0] : !stage.tensor<[D, B, S], bf16> -> !stage.tensor<[B, S, D], bf16>
// CHECK-NEXT:    %[[DV:.*]] = stage.reduce sum %[[D1]] dims [0, 1] : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[D], bf16>
// CHECK-NEXT:    %[[DB:.*]] = stage.slice %[[D1]] dim 2 offset 0 size D/2
// CHECK-NEXT:    %[[DA:.*]] = stage.slice %[[D1]] dim 2 offset D/2 size D/2
// CHECK-NEXT:    %[[PB:.*]] = stage.pad %[[DB]] dim 2 offset D/2 size D : !stage.tensor<[B, S, D/2], bf16> -> !stage.tensor<[B, S, D], bf16>
// CHECK-NEXT:    %[[PA:.*]] = stage.pad %[[DA]] dim 2 offset 0 size D
// CHECK-NEXT:    %[[S:.*]] = stage.ewise add %[[PB]], %[[PA]]
// CHECK-NEXT:    %[[R1:.*]] = stage.reshape %[[S]] : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, S*D], bf16>
// CHECK-NEXT:    %[[R2:.*]] = stage.reshape %[[R1]] : !stage.tensor<[B, S*D], bf16> -> !stage.tensor<[B, S, D], bf16>
// CHECK-NEXT:    stage.yield %[[R2]], %[[DV]]
func.func @data_movement() -> !stage.tensor<[D, B, S], bf16> {
  %w = stage.param "w" : !stage.tensor<[B, S, D], bf16>
  %v = stage.param "v" : !stage.tensor<[D], bf16>
  %r = stage.reshape %w : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, S*D], bf16>
  %r2 = stage.reshape %r : !stage.tensor<[B, S*D], bf16> -> !stage.tensor<[B, S, D], bf16>
  %a = stage.slice %r2 dim 2 offset 0 size D/2 : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, S, D/2], bf16>
  %b = stage.slice %r2 dim 2 offset D/2 size D/2 : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[B, S, D/2], bf16>
  %c = stage.concat %b, %a dim 2 : (!stage.tensor<[B, S, D/2], bf16>, !stage.tensor<[B, S, D/2], bf16>) -> !stage.tensor<[B, S, D], bf16>
  %vb = stage.broadcast %v dims [0, 1] : !stage.tensor<[D], bf16> -> !stage.tensor<[B, S, D], bf16>
  %s = stage.ewise add %c, %vb : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
  %t = stage.transpose %s [2, 0, 1] : !stage.tensor<[B, S, D], bf16> -> !stage.tensor<[D, B, S], bf16>
  return %t : !stage.tensor<[D, B, S], bf16>
}
