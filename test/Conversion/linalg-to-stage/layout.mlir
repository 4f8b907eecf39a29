// RUN: stage-opt %s --convert-linalg-to-stage | FileCheck %s

// Reductions, softmax and layout ops; a tensor constant becomes a buffer
// (an untrained parameter).

// CHECK-LABEL: func.func @layout
// CHECK: %[[V0:.*]] = stage.input "arg0" : !stage.tensor<[4, 8, 16], bf16>
// CHECK-NEXT: %[[V1:.*]] = stage.input "arg1" : !stage.tensor<[16], bf16>
// CHECK-NEXT: %[[V2:.*]] = stage.reduce sum %[[V0]] dims [2] : !stage.tensor<[4, 8, 16], bf16> -> !stage.tensor<[4, 8], bf16>
// CHECK-NEXT: %[[V3:.*]] = stage.reduce max %[[V0]] dims [1] : !stage.tensor<[4, 8, 16], bf16> -> !stage.tensor<[4, 16], bf16>
// CHECK-NEXT: %[[V4:.*]] = stage.softmax %[[V0]] dim 2 : !stage.tensor<[4, 8, 16], bf16>
// CHECK-NEXT: %[[V5:.*]] = stage.transpose %[[V0]] [2, 1, 0] : !stage.tensor<[4, 8, 16], bf16> -> !stage.tensor<[16, 8, 4], bf16>
// CHECK-NEXT: %[[V6:.*]] = stage.broadcast %[[V1]] dims [0, 1] : !stage.tensor<[16], bf16> -> !stage.tensor<[4, 8, 16], bf16>
// CHECK-NEXT: %[[V7:.*]] = stage.reshape %[[V0]] : !stage.tensor<[4, 8, 16], bf16> -> !stage.tensor<[32, 16], bf16>
// CHECK-NEXT: %[[V8:.*]] = stage.reshape %[[V0]] : !stage.tensor<[4, 8, 16], bf16> -> !stage.tensor<[4, 8, 2, 8], bf16>
// CHECK-NEXT: %[[V9:.*]] = stage.slice %[[V0]] dim 1 offset 2 size 2 : !stage.tensor<[4, 8, 16], bf16> -> !stage.tensor<[4, 2, 16], bf16>
// CHECK-NEXT: %[[V10:.*]] = stage.concat %[[V0]], %[[V0]] dim 1 : (!stage.tensor<[4, 8, 16], bf16>, !stage.tensor<[4, 8, 16], bf16>) -> !stage.tensor<[4, 16, 16], bf16>
// CHECK-NEXT: %[[V11:.*]] = stage.param "const.0" kind "buffer" : !stage.tensor<[4, 8, 16], bf16>
// CHECK-NEXT: %[[V12:.*]] = stage.ewise mul %[[V0]], %[[V11]] : (!stage.tensor<[4, 8, 16], bf16>, !stage.tensor<[4, 8, 16], bf16>) -> !stage.tensor<[4, 8, 16], bf16>
// CHECK-NEXT: return %[[V2]], %[[V3]], %[[V4]], %[[V5]], %[[V6]], %[[V7]], %[[V8]], %[[V9]], %[[V10]], %[[V12]] : !stage.tensor<[4, 8], bf16>, !stage.tensor<[4, 16], bf16>, !stage.tensor<[4, 8, 16], bf16>, !stage.tensor<[16, 8, 4], bf16>, !stage.tensor<[4, 8, 16], bf16>, !stage.tensor<[32, 16], bf16>, !stage.tensor<[4, 8, 2, 8], bf16>, !stage.tensor<[4, 2, 16], bf16>, !stage.tensor<[4, 16, 16], bf16>, !stage.tensor<[4, 8, 16], bf16>

func.func @layout(%x: tensor<4x8x16xbf16>, %v: tensor<16xbf16>) -> (tensor<4x8xbf16>, tensor<4x16xbf16>, tensor<4x8x16xbf16>, tensor<16x8x4xbf16>, tensor<4x8x16xbf16>, tensor<32x16xbf16>, tensor<4x8x2x8xbf16>, tensor<4x2x16xbf16>, tensor<4x16x16xbf16>, tensor<4x8x16xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %ninf = arith.constant 0xFF80 : bf16
  %e0 = tensor.empty() : tensor<4x8xbf16>
  %z0 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %sum = linalg.reduce ins(%x : tensor<4x8x16xbf16>) outs(%z0 : tensor<4x8xbf16>) dimensions = [2]
    (%a: bf16, %acc: bf16) {
      %s = arith.addf %a, %acc : bf16
      linalg.yield %s : bf16
    }
  %e1 = tensor.empty() : tensor<4x16xbf16>
  %m1 = linalg.fill ins(%ninf : bf16) outs(%e1 : tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %max = linalg.reduce ins(%x : tensor<4x8x16xbf16>) outs(%m1 : tensor<4x16xbf16>) dimensions = [1]
    (%a: bf16, %acc: bf16) {
      %s = arith.maximumf %a, %acc : bf16
      linalg.yield %s : bf16
    }
  %e2 = tensor.empty() : tensor<4x8x16xbf16>
  %sm = linalg.softmax dimension(2) ins(%x : tensor<4x8x16xbf16>) outs(%e2 : tensor<4x8x16xbf16>) -> tensor<4x8x16xbf16>
  %e3 = tensor.empty() : tensor<16x8x4xbf16>
  %tr = linalg.transpose ins(%x : tensor<4x8x16xbf16>) outs(%e3 : tensor<16x8x4xbf16>) permutation = [2, 1, 0]
  %bc = linalg.broadcast ins(%v : tensor<16xbf16>) outs(%e2 : tensor<4x8x16xbf16>) dimensions = [0, 1]
  %col = tensor.collapse_shape %x [[0, 1], [2]] : tensor<4x8x16xbf16> into tensor<32x16xbf16>
  %exp = tensor.expand_shape %x [[0], [1], [2, 3]] output_shape [4, 8, 2, 8] : tensor<4x8x16xbf16> into tensor<4x8x2x8xbf16>
  %sl = tensor.extract_slice %x[0, 2, 0] [4, 2, 16] [1, 1, 1] : tensor<4x8x16xbf16> to tensor<4x2x16xbf16>
  %cat = tensor.concat dim(1) %x, %x : (tensor<4x8x16xbf16>, tensor<4x8x16xbf16>) -> tensor<4x16x16xbf16>
  %k = arith.constant dense<1.0> : tensor<4x8x16xbf16>
  %e4 = tensor.empty() : tensor<4x8x16xbf16>
  %mk = linalg.elementwise kind=#linalg.elementwise_kind<mul> ins(%x, %k : tensor<4x8x16xbf16>, tensor<4x8x16xbf16>) outs(%e4 : tensor<4x8x16xbf16>) -> tensor<4x8x16xbf16>
  return %sum, %max, %sm, %tr, %bc, %col, %exp, %sl, %cat, %mk : tensor<4x8xbf16>, tensor<4x16xbf16>, tensor<4x8x16xbf16>, tensor<16x8x4xbf16>, tensor<4x8x16xbf16>, tensor<32x16xbf16>, tensor<4x8x2x8xbf16>, tensor<4x2x16xbf16>, tensor<4x16x16xbf16>, tensor<4x8x16xbf16>
}
