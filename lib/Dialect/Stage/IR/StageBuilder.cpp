//===- StageBuilder.cpp - Building stage graphs with inferred types -------===//

#include "Stage/Dialect/Stage/IR/StageBuilder.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

Value GraphBuilder::param(StringRef name, ArrayRef<Expr> dims, Type elementType,
                          StringRef group, ParamKind kind) {
  return ParamOp::create(b, loc, tensor(dims, elementType), name, kind,
                         group.empty() ? StringAttr() : b.getStringAttr(group));
}

Value GraphBuilder::input(StringRef name, ArrayRef<Expr> dims,
                          Type elementType) {
  return InputOp::create(b, loc, tensor(dims, elementType), name);
}

Value GraphBuilder::einsum(StringRef spec, ValueRange inputs,
                           Type elementType) {
  auto [lhs, res] = spec.split("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  std::map<char, Expr> extents;
  for (auto [term, v] : llvm::zip(terms, inputs))
    for (auto [i, c] : llvm::enumerate(term))
      extents.emplace(c, typeOf(v).getDim(i));
  SmallVector<Expr> dims;
  for (char c : res)
    dims.push_back(extents.at(c));
  Type et = elementType ? elementType : typeOf(inputs[0]).getElementType();
  return EinsumOp::create(b, loc, tensor(dims, et), spec, inputs);
}

Value GraphBuilder::ewise(EwiseKind kind, ValueRange inputs,
                          Type elementType) {
  SymTensorType longest = typeOf(inputs[0]);
  for (Value v : inputs)
    if (typeOf(v).getRank() > longest.getRank())
      longest = typeOf(v);
  Type et = elementType ? elementType : typeOf(inputs[0]).getElementType();
  return EwiseOp::create(b, loc, longest.withElementType(et), kind, inputs,
                         IntegerAttr());
}

Value GraphBuilder::reduce(ReduceKind kind, Value x, ArrayRef<int64_t> dims) {
  SymTensorType t = typeOf(x);
  SmallVector<Expr> kept;
  for (unsigned i = 0; i < t.getRank(); ++i)
    if (!llvm::is_contained(dims, int64_t(i)))
      kept.push_back(t.getDim(i));
  return ReduceOp::create(b, loc, t.withDims(kept), kind, x, dims);
}

Value GraphBuilder::softmax(Value x, int64_t dim) {
  return SoftmaxOp::create(b, loc, x.getType(), x, dim);
}

Value GraphBuilder::dropout(Value x) {
  SymTensorType t = typeOf(x);
  Type mask = t.withElementType(IntegerType::get(b.getContext(), 8));
  return DropoutOp::create(b, loc, x.getType(), mask, x).getResult();
}

Value GraphBuilder::norm(NormKind kind, Value x, Value weight, Value bias) {
  return NormOp::create(b, loc, x.getType(), kind, x, weight, bias);
}

Value GraphBuilder::generic(ValueRange inputs, int64_t flopsPerElement) {
  return EwiseOp::create(b, loc, typeOf(inputs.front()), EwiseKind::generic,
                         inputs, b.getI64IntegerAttr(flopsPerElement));
}

Value GraphBuilder::rope(Value x) {
  return RopeOp::create(b, loc, x.getType(), x);
}

Value GraphBuilder::attention(Value q, Value k, Value v, bool causal,
                              std::optional<Expr> window, bool softcap) {
  SymTensorType qt = typeOf(q);
  SmallVector<Expr> dims = {qt.getDim(0), qt.getDim(1), qt.getDim(2),
                            typeOf(v).getDim(3)};
  return AttentionOp::create(b, loc, qt.withDims(dims), q, k, v, causal,
                             /*value_width=*/ExprAttr(),
                             window ? ExprAttr::get(b.getContext(), *window)
                                    : ExprAttr(),
                             softcap);
}

Value GraphBuilder::conv1d(Value x, Value w) {
  return Conv1dOp::create(b, loc, x.getType(), x, w, StringAttr());
}

Value GraphBuilder::ssmScan(Value x, Value dt, Value a, Value bm, Value c,
                            Value d, std::optional<Expr> chunk, bool delta) {
  return SsmScanOp::create(
      b, loc, x.getType(), x, dt, a, bm, c, d,
      chunk ? ExprAttr::get(b.getContext(), *chunk) : ExprAttr(),
      delta ? b.getUnitAttr() : UnitAttr(), StringAttr());
}

Value GraphBuilder::embedding(Value table, Value ids) {
  SmallVector<Expr> dims = typeOf(ids).getDims();
  dims.push_back(typeOf(table).getDim(1));
  return EmbeddingOp::create(
      b, loc, tensor(dims, typeOf(table).getElementType()), table, ids);
}

Value GraphBuilder::crossEntropy(Value logits, Value labels,
                                 Type elementType) {
  return CrossEntropyOp::create(b, loc, tensor({}, elementType), logits,
                                labels);
}

Value GraphBuilder::reshape(Value x, ArrayRef<Expr> dims) {
  return ReshapeOp::create(b, loc, typeOf(x).withDims(dims), x);
}

Value GraphBuilder::transpose(Value x, ArrayRef<int64_t> permutation) {
  SmallVector<Expr> dims;
  for (int64_t p : permutation)
    dims.push_back(typeOf(x).getDim(p));
  return TransposeOp::create(b, loc, typeOf(x).withDims(dims), x,
                             permutation);
}

Value GraphBuilder::slice(Value x, int64_t dim, const Expr &offset,
                          const Expr &size) {
  SmallVector<Expr> dims = typeOf(x).getDims();
  dims[dim] = size;
  return SliceOp::create(b, loc, typeOf(x).withDims(dims), x, dim,
                         ExprAttr::get(getContext(), offset),
                         ExprAttr::get(getContext(), size));
}

Value GraphBuilder::concat(ValueRange inputs, int64_t dim) {
  SmallVector<Expr> dims = typeOf(inputs[0]).getDims();
  Expr total;
  for (Value v : inputs)
    total += typeOf(v).getDim(dim);
  dims[dim] = total;
  return ConcatOp::create(b, loc, typeOf(inputs[0]).withDims(dims), inputs,
                          dim);
}

Value GraphBuilder::broadcast(Value x, ArrayRef<int64_t> newDims,
                              ArrayRef<Expr> resultDims) {
  return BroadcastOp::create(b, loc, typeOf(x).withDims(resultDims), x,
                             newDims);
}

std::pair<Value, Value> GraphBuilder::topk(Value scores, const Expr &k,
                                           Type weightType) {
  SmallVector<Expr> dims = typeOf(scores).getDims();
  dims.back() = k;
  auto op = TopKOp::create(b, loc, tensor(dims, weightType),
                           tensor(dims, b.getI32Type()), scores,
                           ExprAttr::get(getContext(), k));
  return {op.getWeights(), op.getIndices()};
}

Value GraphBuilder::dispatch(Value tokens, Value indices, const Expr &experts,
                             const Expr &capacity) {
  SymTensorType t = typeOf(tokens);
  return DispatchOp::create(
      b, loc, t.withDims({experts, capacity, t.getDim(t.getRank() - 1)}),
      tokens, indices);
}

Value GraphBuilder::combine(Value expertOutputs, Value weights,
                            Value indices) {
  SmallVector<Expr> dims = typeOf(indices).getDims();
  dims.back() = typeOf(expertOutputs).getDim(2);
  return CombineOp::create(b, loc, typeOf(expertOutputs).withDims(dims),
                           expertOutputs, weights, indices);
}
