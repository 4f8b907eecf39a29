// RUN: stage-opt %s | stage-opt | FileCheck %s
// RUN: stage-opt %s --stage-autodiff --test-stage-sharding-rules -o /dev/null 2>&1 | FileCheck %s --check-prefix=RULES
// RUN: stage-opt %s --stage-autodiff | FileCheck %s --check-prefix=GRAD

// The state-space ops round-trip, differentiate, and split as Megatron's
// Mamba layers do: channels (heads, with their groups) over tensor-parallel
// ranks; the sequence, the state and the head dim stay whole.

// CHECK-LABEL: func.func @mamba
// CHECK: stage.conv1d %{{.*}}, %{{.*}} : (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di, Kc], bf16>) -> !stage.tensor<[B, S, Di], bf16>
// CHECK: stage.ssm_scan %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
// RULES-DAG: remark: stage.conv1d ([0, 1, 2], [2, 3]) -> ([0, 1, 2]) frozen {3}
// RULES-DAG: remark: stage.conv1d_grad ([0, 1, 2], [2, 3], [0, 1, 2]) -> ([0, 1, 2], [2, 3]) summable {0, 1} frozen {3}
// Selective: x [b, s, c], A [c, n], B and C [b, s, n], D [c]: A's and D's
// gradients sum over batch and sequence, B's and C's over the channels.
// RULES-DAG: remark: stage.ssm_scan ([0, 1, 2], [0, 1, 2], [2, 3], [0, 1, 3], [0, 1, 3], [2]) -> ([0, 1, 2]) frozen {1, 3}
// RULES-DAG: remark: stage.ssm_scan_grad ([0, 1, 2], [0, 1, 2], [2, 3], [0, 1, 3], [0, 1, 3], [2], [0, 1, 2]) -> ([0, 1, 2], [0, 1, 2], [2, 3], [0, 1, 3], [0, 1, 3], [2]) summable {0, 1, 2} frozen {1, 3}
module attributes {stage.bindings = {B = 2, S = 4, Di = 8, Kc = 4, Ns = 2, Hm = 2, P = 4, G = 2, Q = 2}} {
func.func @mamba() -> !stage.tensor<[], f32> {
  %x = stage.input "x" : !stage.tensor<[B, S, Di], bf16>
  %w = stage.param "conv" : !stage.tensor<[Di, Kc], bf16>
  %dt = stage.param "dt" : !stage.tensor<[B, S, Di], bf16>
  %a = stage.param "A" : !stage.tensor<[Di, Ns], bf16>
  %b = stage.param "B" : !stage.tensor<[B, S, Ns], bf16>
  %d = stage.param "D" : !stage.tensor<[Di], bf16>
  %c = stage.conv1d %x, %w : (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di, Kc], bf16>) -> !stage.tensor<[B, S, Di], bf16>
  %y = stage.ssm_scan %c, %dt, %a, %b, %b, %d : (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di, Ns], bf16>, !stage.tensor<[B, S, Ns], bf16>, !stage.tensor<[B, S, Ns], bf16>, !stage.tensor<[Di], bf16>) -> !stage.tensor<[B, S, Di], bf16>
  %l = stage.reduce sum %y dims [0, 1, 2] : !stage.tensor<[B, S, Di], bf16> -> !stage.tensor<[], bf16>
  %f = stage.ewise cast %l : (!stage.tensor<[], bf16>) -> !stage.tensor<[], f32>
  return %f : !stage.tensor<[], f32>
}

// Chunked (Mamba-2): x [b, s, h, p], dt [b, s, h], A [h], B and C
// [b, s, g, n]: groups split with their heads. One group shared by all
// heads stays whole, and its gradients sum over the heads.
// CHECK-LABEL: func.func @mamba2
// CHECK: stage.ssm_scan {{.*}} chunk <Q> :
// RULES-DAG: remark: stage.ssm_scan ([0, 1, 2, 4], [0, 1, 2], [2], [0, 1, 2, 3], [0, 1, 2, 3], [2]) -> ([0, 1, 2, 4]) frozen {1, 3, 4}
// RULES-DAG: remark: stage.ssm_scan_grad ([0, 1, 2, 4], [0, 1, 2], [2], [0, 1, 2, 3], [0, 1, 2, 3], [2], [0, 1, 2, 4]) -> ([0, 1, 2, 4], [0, 1, 2], [2], [0, 1, 2, 3], [0, 1, 2, 3], [2]) summable {0, 1} frozen {1, 3, 4}
// RULES-DAG: remark: stage.ssm_scan ([0, 1, 2, 4], [0, 1, 2], [2], [0, 1, 5, 3], [0, 1, 5, 3], [2]) -> ([0, 1, 2, 4]) frozen {1, 3, 4, 5}
// RULES-DAG: remark: stage.ssm_scan_grad ([0, 1, 2, 4], [0, 1, 2], [2], [0, 1, 5, 3], [0, 1, 5, 3], [2], [0, 1, 2, 4]) -> ([0, 1, 2, 4], [0, 1, 2], [2], [0, 1, 5, 3], [0, 1, 5, 3], [2]) summable {0, 1, 2} frozen {1, 3, 4, 5}
func.func @mamba2() -> !stage.tensor<[], f32> {
  %x = stage.param "x" : !stage.tensor<[B, S, Hm, P], bf16>
  %dt = stage.param "dt" : !stage.tensor<[B, S, Hm], bf16>
  %a = stage.param "A" : !stage.tensor<[Hm], bf16>
  %b = stage.param "B" : !stage.tensor<[B, S, G, Ns], bf16>
  %b1 = stage.param "B1" : !stage.tensor<[B, S, 1, Ns], bf16>
  %d = stage.param "D" : !stage.tensor<[Hm], bf16>
  %y = stage.ssm_scan %x, %dt, %a, %b, %b, %d chunk <Q> : (!stage.tensor<[B, S, Hm, P], bf16>, !stage.tensor<[B, S, Hm], bf16>, !stage.tensor<[Hm], bf16>, !stage.tensor<[B, S, G, Ns], bf16>, !stage.tensor<[B, S, G, Ns], bf16>, !stage.tensor<[Hm], bf16>) -> !stage.tensor<[B, S, Hm, P], bf16>
  %z = stage.ssm_scan %x, %dt, %a, %b1, %b1, %d chunk <Q> : (!stage.tensor<[B, S, Hm, P], bf16>, !stage.tensor<[B, S, Hm], bf16>, !stage.tensor<[Hm], bf16>, !stage.tensor<[B, S, 1, Ns], bf16>, !stage.tensor<[B, S, 1, Ns], bf16>, !stage.tensor<[Hm], bf16>) -> !stage.tensor<[B, S, Hm, P], bf16>
  %s = stage.ewise add %y, %z : (!stage.tensor<[B, S, Hm, P], bf16>, !stage.tensor<[B, S, Hm, P], bf16>) -> !stage.tensor<[B, S, Hm, P], bf16>
  %l = stage.reduce sum %s dims [0, 1, 2, 3] : !stage.tensor<[B, S, Hm, P], bf16> -> !stage.tensor<[], bf16>
  %f = stage.ewise cast %l : (!stage.tensor<[], bf16>) -> !stage.tensor<[], f32>
  return %f : !stage.tensor<[], f32>
}


// The delta rule (Gated DeltaNet): the chunked form's shapes, beta [b, s, h]
// in the skip's place, split like dt with its heads; its gradient keeps the
// form.
// CHECK-LABEL: func.func @deltanet
// CHECK: stage.ssm_scan {{.*}} chunk <Q> delta :
// RULES-DAG: remark: stage.ssm_scan ([0, 1, 2, 4], [0, 1, 2], [2], [0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2]) -> ([0, 1, 2, 4]) frozen {1, 3, 4}
// RULES-DAG: remark: stage.ssm_scan_grad ([0, 1, 2, 4], [0, 1, 2], [2], [0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2], [0, 1, 2, 4]) -> ([0, 1, 2, 4], [0, 1, 2], [2], [0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2]) summable {0, 1} frozen {1, 3, 4}
// GRAD-LABEL: func.func @deltanet
// GRAD: stage.ssm_scan_grad {{.*}} chunk <Q> delta :
func.func @deltanet() -> !stage.tensor<[], f32> {
  %x = stage.param "v" : !stage.tensor<[B, S, Hm, P], bf16>
  %dt = stage.param "dt" : !stage.tensor<[B, S, Hm], bf16>
  %a = stage.param "A" : !stage.tensor<[Hm], bf16>
  %k = stage.param "k" : !stage.tensor<[B, S, G, Ns], bf16>
  %q = stage.param "q" : !stage.tensor<[B, S, G, Ns], bf16>
  %beta = stage.param "beta" : !stage.tensor<[B, S, Hm], bf16>
  %y = stage.ssm_scan %x, %dt, %a, %k, %q, %beta chunk <Q> delta : (!stage.tensor<[B, S, Hm, P], bf16>, !stage.tensor<[B, S, Hm], bf16>, !stage.tensor<[Hm], bf16>, !stage.tensor<[B, S, G, Ns], bf16>, !stage.tensor<[B, S, G, Ns], bf16>, !stage.tensor<[B, S, Hm], bf16>) -> !stage.tensor<[B, S, Hm, P], bf16>
  %l = stage.reduce sum %y dims [0, 1, 2, 3] : !stage.tensor<[B, S, Hm, P], bf16> -> !stage.tensor<[], bf16>
  %f = stage.ewise cast %l : (!stage.tensor<[], bf16>) -> !stage.tensor<[], f32>
  return %f : !stage.tensor<[], f32>
}

}
