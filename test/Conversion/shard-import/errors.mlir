// RUN: not stage-opt %s --split-input-file --convert-linalg-to-stage="grid-axes=dp,pp" 2>&1 | FileCheck %s --check-prefix=PP
// RUN: not stage-opt %s --split-input-file --convert-linalg-to-stage="grid-axes=dp,xx" 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: stage-opt %s --split-input-file --verify-diagnostics --convert-linalg-to-stage="grid-axes=dp,tp"

// PP: error: grid-axes: 'pp' is no sharding axis; pipeline stages come from stage-train's pp= option
// AXIS: error: grid-axes: 'xx' is not a stage axis (pp, dp, cp, ep, tp)

// expected-error @+1 {{'shard.grid' op has 3 axes but grid-axes names 2}}
shard.grid @mesh(shape = 2x2x2)
func.func @f(%w: tensor<64x256xbf16> {stage.param = "w"}) -> tensor<64x256xbf16> {
  return %w : tensor<64x256xbf16>
}

// -----

// expected-error @+1 {{'shard.grid' op has a dynamic axis; stage needs its size}}
shard.grid @mesh(shape = 2x?)
func.func @f(%w: tensor<64x256xbf16> {stage.param = "w"}) -> tensor<64x256xbf16> {
  return %w : tensor<64x256xbf16>
}

// -----

shard.grid @mesh(shape = 2x4)
// expected-error @+1 {{'shard.grid' op is a second grid; stage plans on one}}
shard.grid @other(shape = 2x4)
func.func @f(%w: tensor<64x256xbf16> {stage.param = "w"}) -> tensor<64x256xbf16> {
  return %w : tensor<64x256xbf16>
}

// -----

shard.grid @mesh(shape = 2x4)
func.func @f(%w: tensor<64x256xbf16> {stage.param = "w"}) -> tensor<64x256xbf16> {
  // expected-error @+1 {{'shard.sharding' op splits over grid axis 2, which grid-axes does not name}}
  %s = shard.sharding @mesh split_axes = [[], [2]] : !shard.sharding
  %ws = shard.shard %w to %s : tensor<64x256xbf16>
  return %ws : tensor<64x256xbf16>
}
