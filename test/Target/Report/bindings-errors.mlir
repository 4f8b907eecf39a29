// RUN: stage-translate --stage-to-report %s -split-input-file -verify-diagnostics -o /dev/null

// A binding that leaves a shape non-integral is reported at the op whose
// type it breaks, with the divisibility it violates.
module attributes {stage.bindings = {B = 1, H = 64, tp = 3}} {
  func.func @f() {
    // expected-error @+1 {{result 0 dimension 1: H/tp = 64/3 is not an integer: tp must divide H}}
    %0 = stage.input "x" : !stage.tensor<[B, H/tp], bf16>
    return
  }
}

// -----

module attributes {stage.bindings = {B = 1}} {
  func.func @f() {
    // expected-error @+1 {{result 0 dimension 1: symbol 'D' is not bound in 'D'}}
    %0 = stage.input "x" : !stage.tensor<[B, D], bf16>
    return
  }
}

// -----

// expected-error @+1 {{binding 'B' must be an integer, got "eight"}}
module attributes {stage.bindings = {B = "eight"}} {
  func.func @f() {
    return
  }
}

// -----

module attributes {stage.bindings = {B = 1, D = 4}} {
  func.func @f() {
    // expected-error @+1 {{result 0 dimension 1: B - D = -3 is not a positive size}}
    %0 = stage.input "x" : !stage.tensor<[B, B - D], bf16>
    return
  }
}

// -----

module attributes {stage.bindings = {L = 7, M = 2, B = 1}} {
  func.func @f(%x: !stage.tensor<[B], bf16>) {
    // expected-error @+1 {{repeat count: L/M = 7/2 is not an integer: M must divide L}}
    stage.repeat L/M {
      stage.yield
    }
    return
  }
}

// -----

// A decode step loop's body is checked at its first and its last step: a
// context that shrinks with the step breaks only at the last (i = 4).
module attributes {stage.bindings = {B = 1, N = 5, W = 3}} {
  func.func @f() {
    stage.repeat N step "i" {
      // expected-error @+1 {{result 0 dimension 1: W - i = -1 is not a positive size}}
      %0 = stage.input "x" : !stage.tensor<[B, W - i], bf16>
      stage.yield
    }
    return
  }
}

// -----

// expected-error @+1 {{the module has no function to report on}}
module {
}
