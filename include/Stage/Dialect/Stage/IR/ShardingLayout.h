//===- ShardingLayout.h - A #stage.sharding to edit -------------*- C++ -*-===//
//
// `#stage.sharding` is immutable; the planner and the partitioner edit a
// sharding axis by axis (which dimension an axis splits, which axes are
// partial) and turn it back into the attribute. The attribute lists a
// dimension's axes and the partial axes in one canonical order (the
// symbols' order: pp, dp, cp, ep, tp), since they are sets: equal
// distributions are equal attributes.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_DIALECT_STAGE_IR_SHARDINGLAYOUT_H
#define STAGE_DIALECT_STAGE_IR_SHARDINGLAYOUT_H

#include "Stage/Dialect/Stage/IR/StageAttrs.h"

#include <string>

namespace mlir::stage {

/// Grid axis names.
using AxisList = SmallVector<std::string>;

/// The canonical attribute of a distribution: `dims[d]` splits dimension
/// d, `partial` holds pending sums.
ShardingAttr getCanonicalSharding(MLIRContext *ctx, ArrayRef<AxisList> dims,
                                  ArrayRef<std::string> partial);

struct ShardingLayout {
  SmallVector<AxisList> dims;
  AxisList partial;

  /// The layout of `s` for a value of `rank` dimensions (replicated when
  /// `s` is null); without `rank`, that of `s`.
  static ShardingLayout of(ShardingAttr s, std::optional<unsigned> rank = {});
  ShardingAttr attr(MLIRContext *ctx) const {
    return getCanonicalSharding(ctx, dims, partial);
  }
  /// The dimension `axis` splits, or -1.
  int dimOf(StringRef axis) const;
  bool isPartial(StringRef axis) const;
};

} // namespace mlir::stage

#endif // STAGE_DIALECT_STAGE_IR_SHARDINGLAYOUT_H
