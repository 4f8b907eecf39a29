//===- TimeModelTest.cpp - What a kernel takes, by its shape ---------------===//
//
// The oracles are worked by hand from the tile-and-wave rule of
// docs/CostModel.md, not from the code.
//
//===----------------------------------------------------------------------===//

#include "Stage/Support/TimeModel.h"

#include "gtest/gtest.h"

using namespace stage;

namespace {

/// An A100-like device: 108 SMs, 256 x 128 tiles, round peaks.
DeviceProfile a100Like() {
  DeviceProfile d;
  d.matmulFlops = 300e12;
  d.matmulEfficiency = 0.5;
  d.vectorFlops = 20e12;
  d.memoryBytes = 2e12;
  d.multiprocessors = 108;
  d.matmulTileRows = 256;
  d.matmulTileColumns = 128;
  return d;
}

TEST(TimeModel, WholeWavesOfWholeTilesLoseNothing) {
  // 9 x 12 tiles of 256 x 128: 108, one wave.
  EXPECT_DOUBLE_EQ(matmulTileEfficiency({9 * 256, 12 * 128, 1}, a100Like()),
                   1.0);
  // 216 tiles over batches: two full waves.
  EXPECT_DOUBLE_EQ(matmulTileEfficiency({256, 128, 216}, a100Like()), 1.0);
}

TEST(TimeModel, APartWaveIdlesItsMultiprocessors) {
  // GPT 18B's QKV projection on 8-way tensor parallelism: 2048 x 2304 is
  // 8 x 18 = 144 tiles either way, two waves of 108: 144 / 216 busy.
  EXPECT_DOUBLE_EQ(matmulTileEfficiency({2048, 2304, 1}, a100Like()),
                   144.0 / 216.0);
}

TEST(TimeModel, APartTileComputesPadding) {
  DeviceProfile d = a100Like();
  d.multiprocessors = 1;
  // 257 x 128 on one SM: as 256 x 128 tiles 2 (257 of 512 rows used); as
  // 128 x 256 tiles cut to the 128 columns, 3 x 1 of 128 x 128 (257 of
  // 384 rows used). The lay that loses less is taken.
  EXPECT_DOUBLE_EQ(matmulTileEfficiency({257, 128, 1}, d),
                   257.0 * 128 / (3 * 128 * 128));
  // A product of the tile laid the other way fills it.
  EXPECT_DOUBLE_EQ(matmulTileEfficiency({128, 256, 1}, d), 1.0);
}

TEST(TimeModel, LessThanAWaveSplitsTheSumOverIdleMultiprocessors) {
  // A decode step's projection, 32 requests x 1280 columns: 10 tiles cut
  // to 32 x 128, fewer than the 108 SMs: no wave is left idle, no padding.
  EXPECT_DOUBLE_EQ(matmulTileEfficiency({32, 1280, 1}, a100Like()), 1.0);
  // 300 x 128: 2 tiles of 256 x 128 (300 of 512 rows) or 3 of 128 x 128
  // (300 of 384); only the padding is lost.
  EXPECT_DOUBLE_EQ(matmulTileEfficiency({300, 128, 1}, a100Like()),
                   300.0 / 384);
}

TEST(TimeModel, UnknownShapesAndTilesLoseNothing) {
  EXPECT_EQ(matmulTileEfficiency({}, a100Like()), 1.0);
  DeviceProfile d = a100Like();
  d.matmulTileRows = 0;
  EXPECT_EQ(matmulTileEfficiency({2048, 2304, 1}, d), 1.0);
  d = a100Like();
  d.multiprocessors = 0;
  EXPECT_EQ(matmulTileEfficiency({2048, 2304, 1}, d), 1.0);
}

TEST(TimeModel, AKernelRunsItsMatrixWorkAtTheTileEfficiency) {
  DeviceProfile d = a100Like();
  double flops = 2.0 * 2048 * 2304 * 6144;
  // At the best shape's fraction of peak, over the busy fraction.
  double expected = flops / (300e12 * 0.5 * (144.0 / 216.0));
  EXPECT_DOUBLE_EQ(kernelSeconds(flops, 0, 1, 1, d, {2048, 2304, 1}),
                   expected);
  // Without a shape: the best shape's rate.
  EXPECT_DOUBLE_EQ(kernelSeconds(flops, 0, 1, 1, d), flops / (300e12 * 0.5));
  // Memory-bound work is not slowed by the tiles.
  EXPECT_DOUBLE_EQ(kernelSeconds(0, 0, 4e9, 1, d, {2048, 2304, 1}),
                   4e9 / 2e12);
}

} // namespace
