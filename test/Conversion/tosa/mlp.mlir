// RUN: stage-opt %s --stage-import-tosa | FileCheck %s

// TOSA enters through the upstream tosa-to-linalg pipeline (with
// tosa-to-arith, tosa-to-tensor and canonicalize) and convert-linalg-to-stage:
// the batch-1 matmul becomes a plain einsum, the [1, 1, F] bias a trailing
// broadcast, tanh a named op, reduce_sum a reduction.

// CHECK-LABEL: func.func @layer
// CHECK: %[[V0:.*]] = stage.input "x" : !stage.tensor<[1, 32, 16], f32>
// CHECK-NEXT: %[[V1:.*]] = stage.param "w" : !stage.tensor<[1, 16, 64], f32>
// CHECK-NEXT: %[[V2:.*]] = stage.param "b" : !stage.tensor<[1, 1, 64], f32>
// CHECK-NEXT: %[[V3:.*]] = stage.reshape %[[V0]] : !stage.tensor<[1, 32, 16], f32> -> !stage.tensor<[32, 16], f32>
// CHECK-NEXT: %[[V4:.*]] = stage.reshape %[[V1]] : !stage.tensor<[1, 16, 64], f32> -> !stage.tensor<[16, 64], f32>
// CHECK-NEXT: %[[V5:.*]] = stage.einsum "bd,dc->bc" %[[V3]], %[[V4]] : (!stage.tensor<[32, 16], f32>, !stage.tensor<[16, 64], f32>) -> !stage.tensor<[32, 64], f32>
// CHECK-NEXT: %[[V6:.*]] = stage.reshape %[[V2]] : !stage.tensor<[1, 1, 64], f32> -> !stage.tensor<[64], f32>
// CHECK-NEXT: %[[V7:.*]] = stage.ewise add %[[V5]], %[[V6]] : (!stage.tensor<[32, 64], f32>, !stage.tensor<[64], f32>) -> !stage.tensor<[32, 64], f32>
// CHECK-NEXT: %[[V8:.*]] = stage.ewise tanh %[[V7]] : (!stage.tensor<[32, 64], f32>) -> !stage.tensor<[32, 64], f32>
// CHECK-NEXT: %[[V9:.*]] = stage.reshape %[[V8]] : !stage.tensor<[32, 64], f32> -> !stage.tensor<[1, 32, 64], f32>
// CHECK-NEXT: %[[V10:.*]] = stage.reduce sum %[[V9]] dims [2] : !stage.tensor<[1, 32, 64], f32> -> !stage.tensor<[1, 32], f32>
// CHECK-NEXT: %[[V11:.*]] = stage.reshape %[[V10]] : !stage.tensor<[1, 32], f32> -> !stage.tensor<[1, 32, 1], f32>
// CHECK-NEXT: return %[[V9]], %[[V11]] : !stage.tensor<[1, 32, 64], f32>, !stage.tensor<[1, 32, 1], f32>

func.func @layer(%x: tensor<1x32x16xf32> {stage.input = "x"},
                 %w: tensor<1x16x64xf32> {stage.param = "w"},
                 %b: tensor<1x1x64xf32> {stage.param = "b"}) -> (tensor<1x32x64xf32>, tensor<1x32x1xf32>) {
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %y = tosa.matmul %x, %w, %zp, %zp : (tensor<1x32x16xf32>, tensor<1x16x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x32x64xf32>
  %yb = tosa.add %y, %b : (tensor<1x32x64xf32>, tensor<1x1x64xf32>) -> tensor<1x32x64xf32>
  %t = tosa.tanh %yb : (tensor<1x32x64xf32>) -> tensor<1x32x64xf32>
  %s = tosa.reduce_sum %t {axis = 2 : i32} : (tensor<1x32x64xf32>) -> tensor<1x32x1xf32>
  return %t, %s : tensor<1x32x64xf32>, tensor<1x32x1xf32>
}
