// RUN: stage-opt %s -split-input-file -verify-diagnostics

func.func @f(%k: !stage.tensor<[B, 1, KV, Dh], bf16>) {
  // expected-error @+1 {{result must be the operand with dimension 1 of size S + 1 (offset + new positions)}}
  %0 = stage.cache_write %k into "c" dim 1 offset S : !stage.tensor<[B, 1, KV, Dh], bf16> -> !stage.tensor<[B, S, KV, Dh], bf16>
  return
}

// -----

func.func @f(%k: !stage.tensor<[B, 1, KV, Dh], bf16>) {
  // expected-error @+1 {{result must be the operand with dimension 1 of size W (the window)}}
  %0 = stage.cache_write %k into "c" dim 1 offset S window <W> : !stage.tensor<[B, 1, KV, Dh], bf16> -> !stage.tensor<[B, S + 1, KV, Dh], bf16>
  return
}

// -----

func.func @f(%k: !stage.tensor<[B, 1], bf16>) {
  // expected-error @+1 {{dim 2 is out of range}}
  %0 = stage.cache_write %k into "c" dim 2 offset S : !stage.tensor<[B, 1], bf16> -> !stage.tensor<[B, 1], bf16>
  return
}

// -----

func.func @f(%k: !stage.tensor<[B, 1], bf16>) {
  // expected-error @+1 {{needs the name of its cache}}
  %0 = stage.cache_write %k into "" dim 1 offset S : !stage.tensor<[B, 1], bf16> -> !stage.tensor<[B, S + 1], bf16>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{must have a layer and a position dimension}}
  %0 = stage.kv_cache "k" : !stage.tensor<[B], bf16>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{needs a name}}
  %0 = stage.kv_cache "" : !stage.tensor<[L, B], bf16>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{has neither a prefill nor a decode region}}
  stage.serve microbatches 1 prefill {
  } decode {
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{decode region must hold one stage.repeat with a step symbol (the decode steps), found 0}}
  stage.serve microbatches 1 prefill {
  } decode {
    stage.yield
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{regions must end with a stage.yield of nothing}}
  stage.serve microbatches 1 prefill {
    %t = stage.input "t" : !stage.tensor<[B], i32>
    stage.yield %t : !stage.tensor<[B], i32>
  } decode {
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{regions take no arguments}}
  stage.serve microbatches 1 prefill {
  ^bb0(%a: !stage.tensor<[B], i32>):
    stage.yield
  } decode {
  }
  return
}

// -----

func.func @f(%t: !stage.tensor<[B, i], i32>) {
  // expected-error @+1 {{operand type '!stage.tensor<[B, i], i32>' uses the step symbol 'i', which exists only inside the body}}
  %r = stage.repeat N step "i" carry(%a = %t : !stage.tensor<[B, i], i32>) {
    stage.yield %a : !stage.tensor<[B, i], i32>
  }
  return
}

// -----

func.func @f(%t: !stage.tensor<[B], i32>) {
  // expected-error @+1 {{step symbol 'N' must be a new name, not used by the count}}
  %r = stage.repeat N step "N" carry(%a = %t : !stage.tensor<[B], i32>) {
    stage.yield %a : !stage.tensor<[B], i32>
  }
  return
}

// -----

func.func @f(%t: !stage.tensor<[B], i32>) {
  // expected-error @+1 {{result type '!stage.tensor<[N, B + i], i32>' uses the step symbol 'i', which exists only inside the body}}
  %r = stage.repeat N step "i" -> stack(!stage.tensor<[N, B + i], i32>) {
    %x = stage.input "x" : !stage.tensor<[B + i], i32>
    stage.yield %x : !stage.tensor<[B + i], i32>
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{split has 2 dimensions, the cache 5}}
  %c = stage.kv_cache "k" split <[[], [dp]]> : !stage.tensor<[L, B/dp, S, KV, Dh], bf16>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{split cannot be a partial sum}}
  %c = stage.kv_cache "k" split <[[], [dp], [], [], []], partial = [tp]> : !stage.tensor<[L, B/dp, S, KV, Dh], bf16>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{with handoff runs the prefill or the decode of a disaggregated run, not both}}
  stage.serve microbatches 1 handoff prefill {
    stage.yield
  } decode {
    %t = stage.input "t" : !stage.tensor<[B], i32>
    stage.repeat N step "i" {
      stage.yield
    }
    stage.yield
  }
  return
}
