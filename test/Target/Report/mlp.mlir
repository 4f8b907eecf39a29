// RUN: stage-translate --stage-to-report %s | FileCheck %s
// RUN: stage-translate --stage-to-report --bind=L=5,B=4 %s | FileCheck %s --check-prefix=BIND

// A stack of L two-layer GeLU MLPs. Per layer and token: two contractions of
// 2*D*F FLOPs each, and GeLU at 8 FLOPs per element of the F-wide hidden.
//   contraction = 4*L*B*S*D*F = 4*3*2*16*8*32 = 98304
//   other       = 8*L*B*S*F   = 8*3*2*16*32   = 24576
// Bytes per layer: the two einsums read and write 2*B*S*D + 2*D*F + 2*B*S*F
// bytes each, GeLU reads and writes 2*2*B*S*F.

module attributes {stage.bindings = {B = 2, S = 16, D = 8, F = 32, L = 3}} {
  func.func @mlp(%x: !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16> {
    %w1 = stage.param "w1" : !stage.tensor<[L, D, F], bf16>
    %w2 = stage.param "w2" : !stage.tensor<[L, F, D], bf16>
    %h = stage.repeat L carry(%a = %x : !stage.tensor<[B, S, D], bf16>) slice(%u = %w1 : !stage.tensor<[L, D, F], bf16>, %d = %w2 : !stage.tensor<[L, F, D], bf16>) {
      %y = stage.einsum "bsd,df->bsf" %a, %u : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, S, F], bf16>
      %g = stage.ewise gelu %y : (!stage.tensor<[B, S, F], bf16>) -> !stage.tensor<[B, S, F], bf16>
      %z = stage.einsum "bsf,fd->bsd" %g, %d : (!stage.tensor<[B, S, F], bf16>, !stage.tensor<[F, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
      stage.yield %z : !stage.tensor<[B, S, D], bf16>
    }
    return %h : !stage.tensor<[B, S, D], bf16>
  }
}

// CHECK: # stage report: @mlp
// CHECK: | contraction FLOPs | `4*L*B*S*D*F` | 98304 |
// CHECK: | other FLOPs | `8*L*B*S*F` | 24576 |
// CHECK: | total FLOPs | `4*L*B*S*D*F + 8*L*B*S*F` | 122880 |
// CHECK: | bytes read and written | `4*L*B*S*D + 8*L*B*S*F + 4*L*D*F` | 30720 |
// CHECK: Bindings: B=2, D=8, F=32, L=3, S=16

// BIND: | contraction FLOPs | `4*L*B*S*D*F` | 327680 |
// BIND: Bindings: B=4, D=8, F=32, L=5, S=16
