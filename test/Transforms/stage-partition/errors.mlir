// RUN: stage-opt %s --stage-partition --split-input-file --verify-diagnostics

// expected-error @below {{stage-partition needs the shardings of stage-shard (no stage.grid in the module)}}
module {
  func.func @f() {
    return
  }
}

// -----

module attributes {stage.bindings = {B = 8, D = 64, tp = 2}} {
  stage.grid @grid [tp]
  func.func @f() {
    // expected-error @below {{the sharding of result #0 names axis 'zz', which grid @grid does not have}}
    %x = stage.input "x" {stage.sharding = [#stage.sharding<[[zz], []]>]} : !stage.tensor<[B, D], bf16>
    return
  }
}

// -----

module attributes {stage.bindings = {B = 8, D = 64, tp = 2}} {
  stage.grid @grid [tp]
  func.func @f() {
    // expected-error @below {{the sharding of result #0 has 1 dimensions, its value 2}}
    %x = stage.input "x" {stage.sharding = [#stage.sharding<[[tp]]>]} : !stage.tensor<[B, D], bf16>
    return
  }
}

// -----

module attributes {stage.bindings = {B = 8, D = 64, tp = 2}} {
  stage.grid @grid [tp]
  func.func @f() {
    %x = stage.input "x" {stage.sharding = [#stage.sharding<[[], []]>]} : !stage.tensor<[B, D], bf16>
    // expected-error @below {{the sharding needed of operand #0 has 3 dimensions, its value 2}}
    %0 = stage.ewise relu %x {stage.operand_sharding = [#stage.sharding<[[tp], [], []]>], stage.sharding = [#stage.sharding<[[], []]>]} : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, D], bf16>
    return
  }
}
