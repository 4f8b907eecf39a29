// Two Megatron MLP blocks with residuals on 2 tensor-parallel ranks, as
// Chakra nodes: every compute node with its FLOPs and bytes, one all-reduce
// of the 8x64 bf16 activation (1024 bytes) after each block forward and one
// for the input gradient of the first block's output in the backward, the
// communication ops chained in issue order. The two ranks' files differ
// only in the rank their metadata names.
//
// RUN: stage-opt %s --stage-train="tp=2" -o %t.mlir
// RUN: stage-translate %t.mlir --stage-to-chakra --rank=0 | FileCheck %s
// RUN: stage-translate %t.mlir --stage-to-chakra --rank=1 | sed 's/"int64_val":"1"},{"name":"num_ranks"/"int64_val":"0"},{"name":"num_ranks"/' > %t.rank1
// RUN: stage-translate %t.mlir --stage-to-chakra --rank=0 | diff - %t.rank1
// RUN: rm -rf %t.dir && stage-translate %t.mlir --stage-to-chakra --output-dir=%t.dir | FileCheck %s --check-prefix=WROTE
// RUN: FileCheck %s --check-prefix=GROUPS < %t.dir/workload.json
// RUN: stage-trace verify %t.dir | FileCheck %s --check-prefix=VERIFIED

// WROTE: wrote 2 traces of 2 ranks ({{[0-9]+}} bytes) and workload.json to
// GROUPS:      {
// GROUPS-NEXT:   "1": [0, 1]
// GROUPS-NEXT: }
// VERIFIED: verified 2 ranks, 50 nodes

// CHECK:      {"version":"0.0.4","attr":[{"name":"trace_set","string_val":"[[SET:[0-9a-f]{32}]]"},{"name":"rank","int64_val":"0"},{"name":"num_ranks","int64_val":"2"}]}
// CHECK-NEXT: {"name":"fwd:einsum","type":"COMP_NODE","attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"131072"},{"name":"tensor_size","uint64_val":"19456"}]}
// CHECK-NEXT: {"id":"1","name":"fwd:ewise","type":"COMP_NODE","data_deps":["0"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"8192"},{"name":"tensor_size","uint64_val":"4096"}]}
// CHECK-NEXT: {"id":"2","name":"fwd:einsum","type":"COMP_NODE","data_deps":["1"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"131072"},{"name":"tensor_size","uint64_val":"19456"}]}
// CHECK-NEXT: {"id":"3","name":"fwd:all_reduce","type":"COMM_COLL_NODE","data_deps":["2"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_type","int64_val":"0"},{"name":"comm_size","int64_val":"1024"},{"name":"comm_tag","int32_val":0},{"name":"pg_name","string_val":"1"}]}
// CHECK-NEXT: {"id":"4","name":"fwd:ewise","type":"COMP_NODE","data_deps":["3"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"512"},{"name":"tensor_size","uint64_val":"3072"}]}
// CHECK-NEXT: {"id":"5","name":"fwd:einsum","type":"COMP_NODE","data_deps":["4"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"131072"},{"name":"tensor_size","uint64_val":"19456"}]}
// CHECK-NEXT: {"id":"6","name":"fwd:ewise","type":"COMP_NODE","data_deps":["5"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"8192"},{"name":"tensor_size","uint64_val":"4096"}]}
// CHECK-NEXT: {"id":"7","name":"fwd:einsum","type":"COMP_NODE","data_deps":["6"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"131072"},{"name":"tensor_size","uint64_val":"19456"}]}
// CHECK-NEXT: {"id":"8","name":"fwd:all_reduce","type":"COMM_COLL_NODE","data_deps":["7","3"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_type","int64_val":"0"},{"name":"comm_size","int64_val":"1024"},{"name":"comm_tag","int32_val":1},{"name":"pg_name","string_val":"1"}]}
// CHECK-NEXT: {"id":"9","name":"fwd:ewise","type":"COMP_NODE","data_deps":["4","8"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"512"},{"name":"tensor_size","uint64_val":"3072"}]}
// CHECK-NEXT: {"id":"10","name":"bwd:einsum","type":"COMP_NODE","data_deps":["9"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"131072"},{"name":"tensor_size","uint64_val":"19456"}]}
// CHECK-NEXT: {"id":"11","name":"bwd:einsum","type":"COMP_NODE","data_deps":["6","9"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"131072"},{"name":"tensor_size","uint64_val":"19456"}]}
// CHECK-NEXT: {"id":"12","name":"bwd:ewise","type":"COMP_NODE","data_deps":["5","10"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"12288"},{"name":"tensor_size","uint64_val":"6144"}]}
// CHECK-NEXT: {"id":"13","name":"bwd:einsum","type":"COMP_NODE","data_deps":["12"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"131072"},{"name":"tensor_size","uint64_val":"19456"}]}
// CHECK-NEXT: {"id":"14","name":"bwd:all_reduce","type":"COMM_COLL_NODE","data_deps":["13","8"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_type","int64_val":"0"},{"name":"comm_size","int64_val":"1024"},{"name":"comm_tag","int32_val":2},{"name":"pg_name","string_val":"1"}]}
// CHECK-NEXT: {"id":"15","name":"bwd:ewise","type":"COMP_NODE","data_deps":["14"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"512"},{"name":"tensor_size","uint64_val":"3072"}]}
// CHECK-NEXT: {"id":"16","name":"bwd:einsum","type":"COMP_NODE","data_deps":["4","12"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"131072"},{"name":"tensor_size","uint64_val":"19456"}]}
// CHECK-NEXT: {"id":"17","name":"bwd:einsum","type":"COMP_NODE","data_deps":["15"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"131072"},{"name":"tensor_size","uint64_val":"19456"}]}
// CHECK-NEXT: {"id":"18","name":"bwd:einsum","type":"COMP_NODE","data_deps":["1","15"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"131072"},{"name":"tensor_size","uint64_val":"19456"}]}
// CHECK-NEXT: {"id":"19","name":"bwd:ewise","type":"COMP_NODE","data_deps":["0","17"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"12288"},{"name":"tensor_size","uint64_val":"6144"}]}
// CHECK-NEXT: {"id":"20","name":"bwd:einsum","type":"COMP_NODE","data_deps":["19"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"131072"},{"name":"tensor_size","uint64_val":"19456"}]}
// CHECK-NEXT: {"id":"21","name":"opt:optimizer_step","type":"COMP_NODE","data_deps":["20"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"139264"},{"name":"tensor_size","uint64_val":"245760"}]}
// CHECK-NEXT: {"id":"22","name":"opt:optimizer_step","type":"COMP_NODE","data_deps":["18"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"139264"},{"name":"tensor_size","uint64_val":"245760"}]}
// CHECK-NEXT: {"id":"23","name":"opt:optimizer_step","type":"COMP_NODE","data_deps":["16"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"139264"},{"name":"tensor_size","uint64_val":"245760"}]}
// CHECK-NEXT: {"id":"24","name":"opt:optimizer_step","type":"COMP_NODE","data_deps":["11"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"139264"},{"name":"tensor_size","uint64_val":"245760"}]}
// CHECK-NOT:  {{.}}

module attributes {stage.bindings = {B = 8, D = 64, F = 256}} {
  func.func @blocks(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16> {
    %w1 = stage.param "b1.w1" group "mlp" : !stage.tensor<[D, F], bf16>
    %w2 = stage.param "b1.w2" group "mlp" : !stage.tensor<[F, D], bf16>
    %w3 = stage.param "b2.w1" group "mlp" : !stage.tensor<[D, F], bf16>
    %w4 = stage.param "b2.w2" group "mlp" : !stage.tensor<[F, D], bf16>
    %h = stage.einsum "bd,df->bf" %x, %w1 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, F], bf16>
    %a = stage.ewise gelu %h : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
    %y = stage.einsum "bf,fd->bd" %a, %w2 : (!stage.tensor<[B, F], bf16>, !stage.tensor<[F, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z = stage.ewise add %x, %y : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %h2 = stage.einsum "bd,df->bf" %z, %w3 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, F], bf16>
    %a2 = stage.ewise gelu %h2 : (!stage.tensor<[B, F], bf16>) -> !stage.tensor<[B, F], bf16>
    %y2 = stage.einsum "bf,fd->bd" %a2, %w4 : (!stage.tensor<[B, F], bf16>, !stage.tensor<[F, D], bf16>) -> !stage.tensor<[B, D], bf16>
    %z2 = stage.ewise add %z, %y2 : (!stage.tensor<[B, D], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    return %z2 : !stage.tensor<[B, D], bf16>
  }
}
