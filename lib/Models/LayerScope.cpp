//===- LayerScope.cpp - The body of a stack of identical layers -----------===//

#include "LayerScope.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::models;

LayerScope::LayerScope(OpBuilder &outer, Location loc, sym::Expr count,
                       std::string prefix, Type paramType, Value carriedInit)
    : outer(outer), loc(loc), count(std::move(count)),
      prefix(std::move(prefix)), paramType(paramType), init(carriedInit),
      block(new Block()), innerBuilder(outer.getContext()),
      inner(innerBuilder, loc) {
  block->addArgument(carriedInit.getType(), loc);
  innerBuilder.setInsertionPointToStart(block);
}

LayerScope::LayerScope(OpBuilder &outer, Location loc, std::string prefix,
                       Type paramType, Value input)
    : outer(outer), loc(loc), prefix(std::move(prefix)), paramType(paramType),
      init(input), block(nullptr), innerBuilder(outer.getContext()),
      inner(outer, loc) {}

Value LayerScope::weight(StringRef name, ArrayRef<sym::Expr> dims,
                         StringRef group) {
  if (!block)
    return inner.param(prefix + "." + name.str(), dims, paramType, group);
  SmallVector<sym::Expr> stacked{count};
  stacked.append(dims.begin(), dims.end());
  GraphBuilder g(outer, loc);
  stacks.push_back(g.param(prefix + "." + name.str(), stacked, paramType, group));
  return block->addArgument(
      SymTensorType::get(outer.getContext(), dims, paramType), loc);
}

Value LayerScope::finish(Value output, int64_t period) {
  if (!block)
    return output;
  YieldOp::create(innerBuilder, loc, ValueRange{output});
  auto op = RepeatOp::create(outer, loc, TypeRange{init.getType()},
                             ExprAttr::get(outer.getContext(), count),
                             /*reverse=*/UnitAttr(), /*step=*/StringAttr(), ValueRange{init}, stacks);
  op.getBody().push_back(block);
  if (period > 1)
    setLayerPeriod(op, period);
  return op.getResult(0);
}

Type mlir::stage::models::getComputeType(MLIRContext *ctx, Precision p) {
  switch (p) {
  case Precision::BF16:
    return BFloat16Type::get(ctx);
  case Precision::FP16:
    return Float16Type::get(ctx);
  case Precision::FP32:
    return Float32Type::get(ctx);
  }
  return BFloat16Type::get(ctx);
}

Value mlir::stage::models::addBias(LayerScope &scope, Value x, StringRef name,
                                   ArrayRef<sym::Expr> dims, StringRef group,
                                   bool enabled) {
  if (!enabled)
    return x;
  Value b = scope.weight(name, dims, group);
  return scope.body().ewise(EwiseKind::add, {x, b});
}
