// RUN: stage-opt %s --split-input-file --verify-diagnostics --convert-linalg-to-stage

// What stage cannot convert is an error at the op, naming it; nothing is dropped.

func.func @index_payload(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  // expected-error @+1 {{'linalg.generic' op cannot be converted to stage: its payload reads loop indices (linalg.index)}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %i = linalg.index 1 : index
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      %s = arith.addf %a, %f : f32
      linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

func.func @strided_map(%x: tensor<16xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  // expected-error @+1 {{'linalg.generic' op has an indexing map that is not a projected permutation of its loops}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0 * 2)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// expected-error @+1 {{dynamic dimensions are not supported}}
func.func @dynamic(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  return %x : tensor<?x16xf32>
}

// -----

func.func @two_results(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  // expected-error @+1 {{'linalg.generic' op has 2 results; stage converts linalg ops with one tensor result}}
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e, %e : tensor<8xf32>, tensor<8xf32>) {
    ^bb0(%a: f32, %o: f32, %p: f32):
      linalg.yield %a, %a : f32, f32
  } -> (tensor<8xf32>, tensor<8xf32>)
  return %r#0 : tensor<8xf32>
}

// -----

func.func @no_rule(%x: tensor<8xf32>) -> tensor<10xf32> {
  %c = arith.constant 0.0 : f32
  // expected-error @+1 {{'tensor.pad' op cannot be converted to stage (no rule for 'tensor.pad')}}
  %p = tensor.pad %x low[1] high[1] {
    ^bb0(%i: index):
      tensor.yield %c : f32
  } : tensor<8xf32> to tensor<10xf32>
  return %p : tensor<10xf32>
}

// -----

func.func @strided_slice(%x: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'tensor.extract_slice' op is not a static, unit-stride slice}}
  %s = tensor.extract_slice %x[0, 0] [4, 16] [2, 1] : tensor<8x16xf32> to tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

func.func @odd_reduction(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  // expected-error @+1 {{'linalg.generic' op cannot be converted to stage: its payload combines the output with its inputs in a way that is neither a sum, a max nor a multiply-accumulate}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.divf %o, %a : f32
      linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
