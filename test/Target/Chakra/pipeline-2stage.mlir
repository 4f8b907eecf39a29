// A two-layer linear stack on a 2-stage 1F1B pipeline with 2 micro-batches,
// as Chakra nodes. Stage 0 runs F0 F1 B0 B1, stage 1 runs F0 B0 F1 B1; the
// activation goes down on channel 0 and its gradient comes back on channel
// 1, with tag = channel * M + micro-batch, 4x64 bf16 = 512 bytes each. The
// first node of each step waits for the last node of the previous one, so
// the trace runs in the schedule's order; the second micro-batch's weight
// gradient is added into the first's as soon as it exists (on stage 1,
// before the step's send), and the optimizer waits for that sum.
//
// RUN: stage-opt %s --stage-train="pp=2 micro-batches=2" -o %t.mlir
// RUN: stage-translate %t.mlir --stage-to-chakra --rank=0 | FileCheck %s --check-prefix=STAGE0
// RUN: stage-translate %t.mlir --stage-to-chakra --rank=1 | FileCheck %s --check-prefix=STAGE1
// RUN: rm -rf %t.dir && stage-translate %t.mlir --stage-to-chakra --output-dir=%t.dir
// RUN: stage-trace verify %t.dir | FileCheck %s --check-prefix=VERIFIED
// VERIFIED: verified 2 ranks, 24 nodes

// STAGE0:      {"version":"0.0.4","attr":[{"name":"trace_set","string_val":"[[SET:[0-9a-f]{32}]]"},{"name":"rank","int64_val":"0"},{"name":"num_ranks","int64_val":"2"}]}
// STAGE0-NEXT: {"name":"fwd:einsum","type":"COMP_NODE","attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE0-NEXT: {"id":"1","name":"fwd:send","type":"COMM_SEND_NODE","data_deps":["0"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_size","int64_val":"512"},{"name":"comm_tag","int32_val":0},{"name":"comm_src","int32_val":0},{"name":"comm_dst","int32_val":1}]}
// STAGE0-NEXT: {"id":"2","name":"fwd:einsum","type":"COMP_NODE","data_deps":["1"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE0-NEXT: {"id":"3","name":"fwd:send","type":"COMM_SEND_NODE","data_deps":["2","1"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_size","int64_val":"512"},{"name":"comm_tag","int32_val":1},{"name":"comm_src","int32_val":0},{"name":"comm_dst","int32_val":1}]}
// STAGE0-NEXT: {"id":"4","name":"bwd:recv","type":"COMM_RECV_NODE","data_deps":["3"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_size","int64_val":"512"},{"name":"comm_tag","int32_val":2},{"name":"comm_src","int32_val":1},{"name":"comm_dst","int32_val":0}]}
// STAGE0-NEXT: {"id":"5","name":"bwd:einsum","type":"COMP_NODE","data_deps":["4"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE0-NEXT: {"id":"6","name":"bwd:einsum","type":"COMP_NODE","data_deps":["4"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE0-NEXT: {"id":"7","name":"bwd:recv","type":"COMM_RECV_NODE","data_deps":["6"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_size","int64_val":"512"},{"name":"comm_tag","int32_val":3},{"name":"comm_src","int32_val":1},{"name":"comm_dst","int32_val":0}]}
// STAGE0-NEXT: {"id":"8","name":"bwd:einsum","type":"COMP_NODE","data_deps":["7"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE0-NEXT: {"id":"9","name":"bwd:einsum","type":"COMP_NODE","data_deps":["7"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE0-NEXT: {"id":"10","name":"acc:grad_accumulate","type":"COMP_NODE","data_deps":["9","6"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"4096"},{"name":"tensor_size","uint64_val":"24576"}]}
// STAGE0-NEXT: {"id":"11","name":"opt:optimizer_step","type":"COMP_NODE","data_deps":["10"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"69632"},{"name":"tensor_size","uint64_val":"122880"}]}
// STAGE0-NOT:  {{.}}

// STAGE1:      {"version":"0.0.4","attr":[{"name":"trace_set","string_val":"[[SET:[0-9a-f]{32}]]"},{"name":"rank","int64_val":"1"},{"name":"num_ranks","int64_val":"2"}]}
// STAGE1-NEXT: {"name":"fwd:recv","type":"COMM_RECV_NODE","attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_size","int64_val":"512"},{"name":"comm_tag","int32_val":0},{"name":"comm_src","int32_val":0},{"name":"comm_dst","int32_val":1}]}
// STAGE1-NEXT: {"id":"1","name":"fwd:einsum","type":"COMP_NODE","data_deps":["0"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE1-NEXT: {"id":"2","name":"bwd:einsum","type":"COMP_NODE","data_deps":["1"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE1-NEXT: {"id":"3","name":"bwd:einsum","type":"COMP_NODE","data_deps":["0","1"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE1-NEXT: {"id":"4","name":"bwd:send","type":"COMM_SEND_NODE","data_deps":["2"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_size","int64_val":"512"},{"name":"comm_tag","int32_val":2},{"name":"comm_src","int32_val":1},{"name":"comm_dst","int32_val":0}]}
// STAGE1-NEXT: {"id":"5","name":"fwd:recv","type":"COMM_RECV_NODE","data_deps":["4"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_size","int64_val":"512"},{"name":"comm_tag","int32_val":1},{"name":"comm_src","int32_val":0},{"name":"comm_dst","int32_val":1}]}
// STAGE1-NEXT: {"id":"6","name":"fwd:einsum","type":"COMP_NODE","data_deps":["5"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE1-NEXT: {"id":"7","name":"bwd:einsum","type":"COMP_NODE","data_deps":["6"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE1-NEXT: {"id":"8","name":"bwd:einsum","type":"COMP_NODE","data_deps":["5","6"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"32768"},{"name":"tensor_size","uint64_val":"9216"}]}
// STAGE1-NEXT: {"id":"9","name":"acc:grad_accumulate","type":"COMP_NODE","data_deps":["8","3"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"4096"},{"name":"tensor_size","uint64_val":"24576"}]}
// STAGE1-NEXT: {"id":"10","name":"bwd:send","type":"COMM_SEND_NODE","data_deps":["7","4"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"comm_size","int64_val":"512"},{"name":"comm_tag","int32_val":3},{"name":"comm_src","int32_val":1},{"name":"comm_dst","int32_val":0}]}
// STAGE1-NEXT: {"id":"11","name":"opt:optimizer_step","type":"COMP_NODE","data_deps":["9"],"attr":[{"name":"is_cpu_op","bool_val":false},{"name":"num_ops","int64_val":"69632"},{"name":"tensor_size","uint64_val":"122880"}]}
// STAGE1-NOT:  {{.}}

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
