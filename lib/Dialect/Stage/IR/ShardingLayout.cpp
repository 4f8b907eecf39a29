//===- ShardingLayout.cpp - A #stage.sharding to edit ---------------------===//

#include "Stage/Dialect/Stage/IR/ShardingLayout.h"

using namespace mlir;
using namespace mlir::stage;

ShardingAttr mlir::stage::getCanonicalSharding(MLIRContext *ctx,
                                               ArrayRef<AxisList> dims,
                                               ArrayRef<std::string> partial) {
  auto sorted = [](ArrayRef<std::string> in) {
    AxisList l(in.begin(), in.end());
    llvm::sort(l, [](const std::string &a, const std::string &b) {
      return sym::symbolRank(a) < sym::symbolRank(b);
    });
    return l;
  };
  SmallVector<AxisList> d;
  for (const AxisList &l : dims)
    d.push_back(sorted(l));
  return ShardingAttr::get(ctx, d, sorted(partial));
}

ShardingLayout ShardingLayout::of(ShardingAttr s,
                                  std::optional<unsigned> rank) {
  ShardingLayout l;
  unsigned n = rank ? *rank : (s ? s.getRank() : 0);
  l.dims.resize(n);
  if (!s)
    return l;
  for (unsigned d = 0; d < n && d < s.getRank(); ++d)
    l.dims[d] = s.getDimAxes(d);
  l.partial = s.getPartialAxes();
  return l;
}

int ShardingLayout::dimOf(StringRef axis) const {
  for (auto [d, axes] : llvm::enumerate(dims))
    if (llvm::is_contained(axes, axis))
      return int(d);
  return -1;
}

bool ShardingLayout::isPartial(StringRef axis) const {
  return llvm::is_contained(partial, axis);
}
