// RUN: stage-opt %s -split-input-file -verify-diagnostics

// The dialect's discardable attributes (StageAnnotations.h) are checked
// where they appear: their kind and, for the module's, their place.

// expected-error @+1 {{'stage.bindings' must be a dictionary}}
module attributes {stage.bindings = [1, 2]} {
}

// -----

module {
  // expected-error @+1 {{'stage.model' belongs on the module}}
  func.func @f() attributes {stage.model = {architecture = "x"}} {
    return
  }
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.sharding' must be a list of #stage.sharding}}
  %0 = stage.input "x" {stage.sharding = ["dp"]} : !stage.tensor<[B], f32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.arg_sharding' must be a list (one per region) of lists of #stage.sharding}}
  %0 = stage.input "x" {stage.arg_sharding = [#stage.sharding<[[]]>]} : !stage.tensor<[B], f32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.plan_sharding' must be a #stage.sharding}}
  %0 = stage.input "x" {stage.plan_sharding = "tp"} : !stage.tensor<[B], f32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.recompute' must be a unit attribute}}
  %0 = stage.input "x" {stage.recompute = 1} : !stage.tensor<[B], f32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.vocab_parallel' must be a list of grid axis names}}
  %0 = stage.input "x" {stage.vocab_parallel = [1]} : !stage.tensor<[B], f32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.dims' must be a list of dimension names}}
  %0 = stage.input "x" {stage.dims = "B"} : !stage.tensor<[B], f32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{unknown attribute 'stage.shardings' of the stage dialect}}
  %0 = stage.input "x" {stage.shardings = []} : !stage.tensor<[B], f32>
  return
}

// -----

// expected-error @+1 {{'stage.param' of argument 0 must be a string}}
func.func @f(%w: tensor<4xf32> {stage.param = 1}) {
  return
}

// -----

// expected-error @+1 {{'stage.dims' of argument 0 must be a list of dimension names}}
func.func @f(%w: tensor<4xf32> {stage.dims = "B"}) {
  return
}

// -----

// expected-error @+1 {{unknown argument attribute 'stage.weight' of the stage dialect}}
func.func @f(%w: tensor<4xf32> {stage.weight = "w"}) {
  return
}

// -----

// Well-formed ones pass.
module attributes {stage.bindings = {B = 2 : i64}, stage.model = {architecture = "LlamaForCausalLM"}} {
  func.func @f(%w: tensor<4xf32> {stage.param = "w", stage.group = "mlp", stage.dims = ["D"]}) {
    %0 = stage.input "x" {stage.sharding = [#stage.sharding<[[]]>], stage.recompute, stage.vocab_parallel = ["tp"]} : !stage.tensor<[B], f32>
    return
  }
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.token_feedback' belongs on a stage.send or stage.recv}}
  %0 = stage.input "x" {stage.token_feedback} : !stage.tensor<[B], i32>
  return
}

// -----

stage.grid @grid [pp]
func.func @f() {
  // expected-error @+1 {{'stage.token_feedback' must be a unit attribute}}
  %0 = stage.recv on @grid [pp] shift -1 channel 2 {stage.token_feedback = 1} : !stage.tensor<[B], i32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.layer_period' must be a positive integer on a stage.repeat}}
  %0 = stage.input "x" {stage.layer_period = 2 : i64} : !stage.tensor<[B], f32>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, D], bf16>) {
  // expected-error @+1 {{'stage.layer_period' must be a positive integer on a stage.repeat}}
  %0 = stage.repeat 2 carry(%a = %x : !stage.tensor<[B, D], bf16>) attributes {stage.layer_period = 0 : i64} {
    stage.yield %a : !stage.tensor<[B, D], bf16>
  }
  return
}

// -----

// expected-error @+1 {{'stage.overlap' must be a list of grad, tp and fsdp on the module}}
module attributes {stage.overlap = ["grad", "pp"]} {
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.overlap' must be a list of grad, tp and fsdp on the module}}
  %0 = stage.input "x" {stage.overlap = ["grad"]} : !stage.tensor<[B], f32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.layer' must be a non-negative integer}}
  %0 = stage.input "x" {stage.layer = -1 : i64} : !stage.tensor<[B], f32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.held_by' must be at least two increasing stage indices on a stage.param}}
  %0 = stage.param "w" {stage.held_by = array<i64: 2, 1>} : !stage.tensor<[D], f32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'stage.held_by' must be at least two increasing stage indices on a stage.param}}
  %0 = stage.input "x" {stage.held_by = array<i64: 0, 1>} : !stage.tensor<[D], f32>
  return
}
