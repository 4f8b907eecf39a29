//===- StageBuilder.h - Building stage graphs with inferred types -*- C++ -*-===//
//
// A thin layer over OpBuilder that infers result types from the operands, so
// model builders, autodiff and conversions write graphs as formulas.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_DIALECT_STAGE_IR_STAGEBUILDER_H
#define STAGE_DIALECT_STAGE_IR_STAGEBUILDER_H

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::stage {

class GraphBuilder {
public:
  GraphBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &builder() { return b; }
  Location getLoc() const { return loc; }
  void setLoc(Location l) { loc = l; }
  MLIRContext *getContext() { return b.getContext(); }

  static SymTensorType typeOf(Value v) {
    return llvm::cast<SymTensorType>(v.getType());
  }
  SymTensorType tensor(ArrayRef<sym::Expr> dims, Type elementType) {
    return SymTensorType::get(getContext(), dims, elementType);
  }

  Value param(StringRef name, ArrayRef<sym::Expr> dims, Type elementType,
              StringRef group = "", ParamKind kind = ParamKind::weight);
  Value input(StringRef name, ArrayRef<sym::Expr> dims, Type elementType);

  /// Result shape from the spec and operand extents; element type of the
  /// first operand unless given.
  Value einsum(StringRef spec, ValueRange inputs, Type elementType = {});
  /// Result shape of the longest operand; element type of the first
  /// operand unless given (as for `cast`).
  Value ewise(EwiseKind kind, ValueRange inputs, Type elementType = {});
  /// An elementwise op that is none of the named kinds, costing
  /// `flopsPerElement` per result element (a scale, a soft-cap).
  Value generic(ValueRange inputs, int64_t flopsPerElement);
  Value cast(Value v, Type elementType) {
    return typeOf(v).getElementType() == elementType
               ? v
               : ewise(EwiseKind::cast, {v}, elementType);
  }
  Value reduce(ReduceKind kind, Value x, ArrayRef<int64_t> dims);
  Value softmax(Value x, int64_t dim);
  /// Dropout's result; its mask (one byte per element) is the op's second.
  Value dropout(Value x);
  Value norm(NormKind kind, Value x, Value weight = {}, Value bias = {});
  Value rope(Value x);
  /// With `window`, each query attends to that many keys before it; with
  /// `softcap`, the scores are soft-capped in the kernel.
  Value attention(Value q, Value k, Value v, bool causal,
                  std::optional<sym::Expr> window = std::nullopt,
                  bool softcap = false);
  Value embedding(Value table, Value ids);
  /// Causal depthwise convolution of `x [B, S, channels...]` with
  /// `w [channels..., K]`.
  Value conv1d(Value x, Value w);
  /// The selective scan with its skip `d` (`a` the log of -A; `chunk`
  /// set: Mamba-2's chunked form).
  /// With `delta`, the delta rule: `d` is then beta (ssm_scan's forms).
  Value ssmScan(Value x, Value dt, Value a, Value b, Value c, Value d,
                std::optional<sym::Expr> chunk = std::nullopt,
                bool delta = false);
  Value crossEntropy(Value logits, Value labels, Type elementType);
  Value reshape(Value x, ArrayRef<sym::Expr> dims);
  Value transpose(Value x, ArrayRef<int64_t> permutation);
  Value slice(Value x, int64_t dim, const sym::Expr &offset,
              const sym::Expr &size);
  Value concat(ValueRange inputs, int64_t dim);
  Value broadcast(Value x, ArrayRef<int64_t> newDims,
                  ArrayRef<sym::Expr> resultDims);
  std::pair<Value, Value> topk(Value scores, const sym::Expr &k,
                               Type weightType);
  Value dispatch(Value tokens, Value indices, const sym::Expr &experts,
                 const sym::Expr &capacity);
  Value combine(Value expertOutputs, Value weights, Value indices);

private:
  OpBuilder &b;
  Location loc;
};

} // namespace mlir::stage

#endif // STAGE_DIALECT_STAGE_IR_STAGEBUILDER_H
