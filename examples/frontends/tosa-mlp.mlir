// A SwiGLU MLP (as in Llama: down(silu(gate(x)) * up(x))) in TOSA, in the
// form of torch-mlir's TOSA backend for three bias-free nn.Linear layers:
// each weight is [out, in] and transposed, the tokens are flattened to one
// [1, B*S, D] batch for tosa.matmul and reshaped back. Written by hand; fp32,
// batch 4, sequence 256, width 512, FFN width 1408.
//
//   stage-opt tosa-mlp.mlir --stage-import-tosa \
//     --stage-symbolize="B=4,S=256,D=512,F=1408" --stage-train="tp=2 dp=2"
func.func @mlp(
    %x: tensor<4x256x512xf32> {stage.input = "x"},
    %w_gate: tensor<1408x512xf32> {stage.param = "mlp.gate_proj.weight"},
    %w_up: tensor<1408x512xf32> {stage.param = "mlp.up_proj.weight"},
    %w_down: tensor<512x1408xf32> {stage.param = "mlp.down_proj.weight"}) -> tensor<4x256x512xf32> {
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %tokens = tosa.const_shape {values = dense<[1, 1024, 512]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %wide = tosa.const_shape {values = dense<[1, 512, 1408]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %narrow = tosa.const_shape {values = dense<[1, 1408, 512]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %out = tosa.const_shape {values = dense<[4, 256, 512]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %x2 = tosa.reshape %x, %tokens : (tensor<4x256x512xf32>, !tosa.shape<3>) -> tensor<1x1024x512xf32>

  // gate_proj and up_proj
  %wg_t = tosa.transpose %w_gate {perms = array<i32: 1, 0>} : (tensor<1408x512xf32>) -> tensor<512x1408xf32>
  %wg = tosa.reshape %wg_t, %wide : (tensor<512x1408xf32>, !tosa.shape<3>) -> tensor<1x512x1408xf32>
  %gate = tosa.matmul %x2, %wg, %zp, %zp : (tensor<1x1024x512xf32>, tensor<1x512x1408xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1024x1408xf32>
  %wu_t = tosa.transpose %w_up {perms = array<i32: 1, 0>} : (tensor<1408x512xf32>) -> tensor<512x1408xf32>
  %wu = tosa.reshape %wu_t, %wide : (tensor<512x1408xf32>, !tosa.shape<3>) -> tensor<1x512x1408xf32>
  %up = tosa.matmul %x2, %wu, %zp, %zp : (tensor<1x1024x512xf32>, tensor<1x512x1408xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1024x1408xf32>

  // silu(gate) * up
  %sig = tosa.sigmoid %gate : (tensor<1x1024x1408xf32>) -> tensor<1x1024x1408xf32>
  %silu = tosa.mul %gate, %sig, %shift : (tensor<1x1024x1408xf32>, tensor<1x1024x1408xf32>, tensor<1xi8>) -> tensor<1x1024x1408xf32>
  %h = tosa.mul %silu, %up, %shift : (tensor<1x1024x1408xf32>, tensor<1x1024x1408xf32>, tensor<1xi8>) -> tensor<1x1024x1408xf32>

  // down_proj
  %wd_t = tosa.transpose %w_down {perms = array<i32: 1, 0>} : (tensor<512x1408xf32>) -> tensor<1408x512xf32>
  %wd = tosa.reshape %wd_t, %narrow : (tensor<1408x512xf32>, !tosa.shape<3>) -> tensor<1x1408x512xf32>
  %y = tosa.matmul %h, %wd, %zp, %zp : (tensor<1x1024x1408xf32>, tensor<1x1408x512xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1024x512xf32>
  %r = tosa.reshape %y, %out : (tensor<1x1024x512xf32>, !tosa.shape<3>) -> tensor<4x256x512xf32>
  return %r : tensor<4x256x512xf32>
}
