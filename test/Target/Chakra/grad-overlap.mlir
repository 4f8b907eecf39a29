// Gradient reduction overlaps the backward pass: a two-layer linear stack
// at dp=2 with 2 micro-batches. The first micro-batch's backward only
// produces gradients; in the second, each layer's weight gradient is added
// into the first's as soon as it exists, and that layer's data-parallel
// all-reduce (64x64 bf16 = 8192 bytes) is issued right after, so layer 1's
// gradient is in flight while layer 0's backward computes. The all-reduces
// stay in the rank's communication chain (the second waits for the first),
// and the optimizer waits for both. Buckets of 8 KiB hold one layer each;
// with the default 25 MiB buckets, both layers' gradients are reduced by
// one all-reduce once the backward pass is over.
//
// RUN: stage-opt %s --stage-train="dp=2 micro-batches=2" -o %t.mlir
// RUN: stage-translate %t.mlir --stage-to-chakra --rank=0 --grad-bucket=8KiB | FileCheck %s
// RUN: stage-translate %t.mlir --stage-to-chakra --rank=0 | FileCheck %s --check-prefix=BUCKET
// BUCKET:      "id":"13","name":"acc:grad_accumulate"
// BUCKET-NEXT: {"id":"14","name":"grad:all_reduce","type":"COMM_COLL_NODE","data_deps":["10","13"],{{.*}}"comm_size","int64_val":"16384"
// BUCKET-NEXT: {"id":"15","name":"opt:optimizer_step","type":"COMP_NODE","data_deps":["14"]
// BUCKET-NOT:  grad:
// RUN: not stage-translate %t.mlir --stage-to-chakra --rank=0 --grad-bucket=big 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: --grad-bucket=big: expected a size, as in 25MiB, or 0
// RUN: rm -rf %t.dir && stage-translate %t.mlir --stage-to-chakra --output-dir=%t.dir
// RUN: stage-trace verify %t.dir | FileCheck %s --check-prefix=VERIFIED
// VERIFIED: verified 2 ranks, 32 nodes

// CHECK:      {"version":"0.0.4","attr":[{"name":"trace_set","string_val":"[[SET:[0-9a-f]{32}]]"},{"name":"rank","int64_val":"0"},{"name":"num_ranks","int64_val":"2"}]}
// CHECK-NEXT: {"name":"fwd:einsum","type":"COMP_NODE","attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"1","name":"fwd:einsum","type":"COMP_NODE","data_deps":["0"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"2","name":"bwd:einsum","type":"COMP_NODE","data_deps":["1"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"3","name":"bwd:einsum","type":"COMP_NODE","data_deps":["0","1"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"4","name":"bwd:einsum","type":"COMP_NODE","data_deps":["2"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"5","name":"bwd:einsum","type":"COMP_NODE","data_deps":["2"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"6","name":"fwd:einsum","type":"COMP_NODE","data_deps":["5"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"7","name":"fwd:einsum","type":"COMP_NODE","data_deps":["6"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"8","name":"bwd:einsum","type":"COMP_NODE","data_deps":["7"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"9","name":"bwd:einsum","type":"COMP_NODE","data_deps":["6","7"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"10","name":"acc:grad_accumulate","type":"COMP_NODE","data_deps":["9","3"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"4096"},{"name":"tensor_size","uint64_val":"24576"}]}
// CHECK-NEXT: {"id":"11","name":"grad:all_reduce","type":"COMM_COLL_NODE","data_deps":["10"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_type","int64_val":"0"},{"name":"comm_size","int64_val":"8192"},{"name":"comm_tag","int32_val":0},{"name":"pg_name","string_val":"1"}]}
// CHECK-NEXT: {"id":"12","name":"bwd:einsum","type":"COMP_NODE","data_deps":["8"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"13","name":"bwd:einsum","type":"COMP_NODE","data_deps":["8"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"16384"},{"name":"tensor_size","uint64_val":"8704"}]}
// CHECK-NEXT: {"id":"14","name":"acc:grad_accumulate","type":"COMP_NODE","data_deps":["13","5"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"4096"},{"name":"tensor_size","uint64_val":"24576"}]}
// CHECK-NEXT: {"id":"15","name":"grad:all_reduce","type":"COMM_COLL_NODE","data_deps":["14","11"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_type","int64_val":"0"},{"name":"comm_size","int64_val":"8192"},{"name":"comm_tag","int32_val":1},{"name":"pg_name","string_val":"1"}]}
// CHECK-NEXT: {"id":"16","name":"opt:optimizer_step","type":"COMP_NODE","data_deps":["15","11"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"139264"},{"name":"tensor_size","uint64_val":"245760"}]}
// CHECK-NOT:  {{.}}

module attributes {stage.bindings = {B = 8, D = 64}} {
  func.func @stack(%x: !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16> {
    %w = stage.param "w" group "mlp" : !stage.tensor<[2, D, D], bf16>
    %y = stage.repeat 2 carry(%h = %x : !stage.tensor<[B, D], bf16>) slice(%wi = %w : !stage.tensor<[2, D, D], bf16>) {
      %z = stage.einsum "bd,de->be" %h, %wi : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, D], bf16>) -> !stage.tensor<[B, D], bf16>
      stage.yield %z : !stage.tensor<[B, D], bf16>
    }
    return %y : !stage.tensor<[B, D], bf16>
  }
}
