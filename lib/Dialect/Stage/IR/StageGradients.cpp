//===- StageGradients.cpp - Vector-Jacobian products of the ops -----------===//
//
// Each forward op builds the gradients of its operands from the gradients of
// its results. The rules only ask the emitter for forward values they really
// use, so the set of activations autodiff keeps is exactly what the backward
// needs.
//
//===----------------------------------------------------------------------===//

#include "Stage/Dialect/Stage/IR/StageBuilder.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

/// The gradient of a broadcast operand: summed over the leading dimensions
/// the operand lacks, in the operand's element type.
static Value reduceToOperand(GraphBuilder &g, Value grad, Value operand) {
  SymTensorType gt = getTensorType(grad), ot = getTensorType(operand);
  if (gt.getRank() > ot.getRank()) {
    SmallVector<int64_t> dims;
    for (unsigned i = 0; i < gt.getRank() - ot.getRank(); ++i)
      dims.push_back(i);
    grad = g.reduce(ReduceKind::sum, grad, dims);
  }
  return g.cast(grad, ot.getElementType());
}

static Value generic(GraphBuilder &g, ValueRange inputs, Type resultLike,
                     int64_t flopsPerElement) {
  auto t = cast<SymTensorType>(resultLike);
  return EwiseOp::create(g.builder(), g.getLoc(), t, EwiseKind::generic, inputs,
                         g.builder().getI64IntegerAttr(flopsPerElement));
}

static LogicalResult noGradient(Operation *op) {
  return op->emitOpError("has no gradient rule (it is itself a backward op)");
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult EinsumOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc)
    return success();
  if (getInputs().size() != 2)
    return emitOpError("with ")
           << getInputs().size()
           << " operands has no gradient rule (only two-operand contractions)";
  SmallVector<std::string> in = getInputIndices();
  std::string out = getResultIndices();
  GraphBuilder &g = e.builder();
  for (unsigned i = 0; i < 2; ++i) {
    Value operand = getInputs()[i], other = getInputs()[1 - i];
    if (!e.needsGradient(operand))
      continue;
    const std::string &mine = in[i], &theirs = in[1 - i];
    for (char c : mine)
      if (out.find(c) == std::string::npos &&
          theirs.find(c) == std::string::npos)
        return emitOpError("index '")
               << c << "' of operand " << i
               << " is summed away alone; its gradient needs a broadcast";
    // dA = dC . B over the indices of B not in A; likewise for dB.
    std::string spec = i == 0 ? out + "," + theirs + "->" + mine
                              : theirs + "," + out + "->" + mine;
    Value otherFwd = e.getForward(other);
    Value grad = i == 0 ? g.einsum(spec, {dc, otherFwd},
                                   getTensorType(operand).getElementType())
                        : g.einsum(spec, {otherFwd, dc},
                                   getTensorType(operand).getElementType());
    e.addGradient(operand, grad);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// One case per elementwise kind.
LogicalResult EwiseOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc)
    return success();
  GraphBuilder &g = e.builder();
  auto in = [&](unsigned i) { return getInputs()[i]; };
  auto give = [&](unsigned i, Value grad) {
    if (e.needsGradient(in(i)))
      e.addGradient(in(i), reduceToOperand(g, grad, in(i)));
  };
  auto fwd = [&](unsigned i) { return e.getForward(in(i)); };
  auto fwdResult = [&]() { return e.getForward(getResult()); };
  Type rt = getResult().getType();
  switch (getKind()) {
  case EwiseKind::add:
    give(0, dc);
    give(1, dc);
    return success();
  case EwiseKind::sub:
    give(0, dc);
    if (e.needsGradient(in(1)))
      give(1, g.ewise(EwiseKind::neg, {dc}));
    return success();
  case EwiseKind::mul:
    if (e.needsGradient(in(0)))
      give(0,
           g.ewise(EwiseKind::mul,
                   {dc, g.cast(fwd(1), getTensorType(dc).getElementType())}));
    if (e.needsGradient(in(1)))
      give(1,
           g.ewise(EwiseKind::mul,
                   {dc, g.cast(fwd(0), getTensorType(dc).getElementType())}));
    return success();
  case EwiseKind::div:
    if (e.needsGradient(in(0)))
      give(0, g.ewise(EwiseKind::div, {dc, fwd(1)}));
    if (e.needsGradient(in(1)))
      give(1, generic(g, {dc, fwd(0), fwd(1)}, rt, 3)); // -dc * a / b^2
    return success();
  case EwiseKind::max:
  case EwiseKind::min:
    for (unsigned i = 0; i < 2; ++i)
      if (e.needsGradient(in(i)))
        give(i, generic(g, {dc, fwd(0), fwd(1)}, rt, 1)); // dc where chosen
    return success();
  case EwiseKind::neg:
    give(0, g.ewise(EwiseKind::neg, {dc}));
    return success();
  case EwiseKind::exp:
    give(0, g.ewise(EwiseKind::mul, {dc, fwdResult()}));
    return success();
  case EwiseKind::log:
    give(0, g.ewise(EwiseKind::div, {dc, fwd(0)}));
    return success();
  case EwiseKind::sqrt: // dc / (2 sqrt(x))
    give(0, generic(g, {dc, fwdResult()}, rt, 2));
    return success();
  case EwiseKind::rsqrt: // -dc * y^3 / 2
    give(0, generic(g, {dc, fwdResult()}, rt, 3));
    return success();
  case EwiseKind::reciprocal: // -dc * y^2
    give(0, generic(g, {dc, fwdResult()}, rt, 3));
    return success();
  case EwiseKind::square: // 2 x dc
    give(0, generic(g, {dc, fwd(0)}, rt, 2));
    return success();
  case EwiseKind::tanh:
    give(0, g.ewise(EwiseKind::tanh_grad, {fwdResult(), dc}));
    return success();
  case EwiseKind::sigmoid:
    give(0, g.ewise(EwiseKind::sigmoid_grad, {fwdResult(), dc}));
    return success();
  case EwiseKind::silu:
    give(0, g.ewise(EwiseKind::silu_grad, {fwd(0), dc}));
    return success();
  case EwiseKind::gelu:
    give(0, g.ewise(EwiseKind::gelu_grad, {fwd(0), dc}));
    return success();
  case EwiseKind::relu:
    give(0, g.ewise(EwiseKind::relu_grad, {fwdResult(), dc}));
    return success();
  case EwiseKind::copy:
    give(0, dc);
    return success();
  case EwiseKind::cast:
    give(0, g.cast(dc, getTensorType(in(0)).getElementType()));
    return success();
  case EwiseKind::select: // dc routed to the chosen branch
    for (unsigned i = 1; i < 3; ++i)
      if (e.needsGradient(in(i)))
        give(i, generic(g, {fwd(0), dc}, rt, 1));
    return success();
  case EwiseKind::generic: {
    SmallVector<Value> ins{dc};
    for (unsigned i = 0; i < getInputs().size(); ++i)
      ins.push_back(fwd(i));
    for (unsigned i = 0; i < getInputs().size(); ++i)
      if (e.needsGradient(in(i)))
        give(i, generic(g, ins, rt, getFlopsPerElement().value_or(1)));
    return success();
  }
  default:
    return noGradient(*this);
  }
}

//===----------------------------------------------------------------------===//
// Reductions, normalizations, lookups, attention
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc || !e.needsGradient(getInput()))
    return success();
  GraphBuilder &g = e.builder();
  SymTensorType in = getInput().getType();
  Value spread = g.broadcast(dc, getDims(), in.getDims());
  if (getKind() == ReduceKind::sum) {
    e.addGradient(getInput(), spread);
  } else if (getKind() == ReduceKind::mean) {
    e.addGradient(getInput(), generic(g, {spread}, in, 1));
  } else { // max: the gradient goes where the maximum was
    e.addGradient(getInput(),
                  generic(g, {spread, e.getForward(getInput())}, in, 2));
  }
  return success();
}

LogicalResult SoftmaxOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc || !e.needsGradient(getInput()))
    return success();
  GraphBuilder &g = e.builder();
  e.addGradient(getInput(),
                SoftmaxGradOp::create(g.builder(), g.getLoc(), dc.getType(),
                                      e.getForward(getResult()), dc, getDim()));
  return success();
}

LogicalResult NormOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc)
    return success();
  GraphBuilder &g = e.builder();
  Value w = getWeight() ? e.getForward(getWeight()) : Value();
  SmallVector<Type> paramTypes;
  if (getWeight())
    paramTypes.push_back(getWeight().getType());
  if (getBias())
    paramTypes.push_back(getBias().getType());
  auto op = NormGradOp::create(g.builder(), g.getLoc(), getInput().getType(),
                               paramTypes, getKind(), e.getForward(getInput()),
                               dc, w, bool(getBias()));
  if (e.needsGradient(getInput()))
    e.addGradient(getInput(), op.getInputGrad());
  if (getWeight() && e.needsGradient(getWeight()))
    e.addGradient(getWeight(), op.getWeightGrad());
  if (getBias() && e.needsGradient(getBias()))
    e.addGradient(getBias(), op.getBiasGrad());
  return success();
}

LogicalResult RopeOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc || !e.needsGradient(getInput()))
    return success();
  if (getInverse())
    return noGradient(*this);
  GraphBuilder &g = e.builder();
  e.addGradient(getInput(), RopeOp::create(g.builder(), g.getLoc(),
                                           dc.getType(), dc, /*inverse=*/true));
  return success();
}

LogicalResult EmbeddingOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc || !e.needsGradient(getTable()))
    return success();
  GraphBuilder &g = e.builder();
  e.addGradient(getTable(),
                EmbeddingGradOp::create(g.builder(), g.getLoc(),
                                        getTable().getType(), dc,
                                        e.getForward(getIds())));
  return success();
}

// The loss is the objective: its own gradient is the unit seed, whatever
// `dc` holds.
LogicalResult CrossEntropyOp::buildGradient(GradientEmitter &e) {
  if (!e.getGradient(getResult()) || !e.needsGradient(getLogits()))
    return success();
  GraphBuilder &g = e.builder();
  e.addGradient(getLogits(), CrossEntropyGradOp::create(
                                 g.builder(), g.getLoc(), getLogits().getType(),
                                 e.getForward(getLogits()),
                                 e.getForward(getLabels())));
  return success();
}

LogicalResult AttentionOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc)
    return success();
  if (getValueWidth())
    return emitOpError("with value_width (absorbed latent attention) has no "
                       "gradient: it belongs to inference");
  GraphBuilder &g = e.builder();
  auto op = AttentionGradOp::create(
      g.builder(), g.getLoc(), getQuery().getType(), getKey().getType(),
      getValue().getType(), e.getForward(getQuery()), e.getForward(getKey()),
      e.getForward(getValue()), e.getForward(getResult()), dc, getCausal(),
      getWindowAttr(), getSoftcap());
  Value ins[] = {getQuery(), getKey(), getValue()};
  Value grads[] = {op.getQueryGrad(), op.getKeyGrad(), op.getValueGrad()};
  for (auto [in, grad] : llvm::zip(ins, grads))
    if (e.needsGradient(in))
      e.addGradient(in, grad);
  return success();
}

LogicalResult DropoutOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc || !e.needsGradient(getInput()))
    return success();
  e.addGradient(getInput(), generic(e.builder(), {dc, e.getForward(getMask())},
                                    dc.getType(), 1));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (dc && e.needsGradient(getInput()))
    e.addGradient(getInput(),
                  e.builder().reshape(dc, getInput().getType().getDims()));
  return success();
}

LogicalResult TransposeOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc || !e.needsGradient(getInput()))
    return success();
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  e.addGradient(getInput(), e.builder().transpose(dc, inverse));
  return success();
}

LogicalResult SliceOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc || !e.needsGradient(getInput()))
    return success();
  GraphBuilder &g = e.builder();
  SymTensorType in = getInput().getType();
  e.addGradient(
      getInput(),
      PadOp::create(g.builder(), g.getLoc(),
                    in.withElementType(getTensorType(dc).getElementType()), dc,
                    getDim(), getOffset(),
                    ExprAttr::get(getContext(), in.getDim(getDim()))));
  return success();
}

LogicalResult PadOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (dc && e.needsGradient(getInput()))
    e.addGradient(getInput(),
                  e.builder().slice(dc, getDim(), getOffset().getValue(),
                                    getInput().getType().getDim(getDim())));
  return success();
}

LogicalResult CacheWriteOp::buildGradient(GradientEmitter &) {
  return emitOpError("has no gradient: a KV cache belongs to inference");
}

LogicalResult ConcatOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc)
    return success();
  Expr offset;
  for (Value in : getInputs()) {
    Expr size = getTensorType(in).getDim(getDim());
    if (e.needsGradient(in))
      e.addGradient(in, e.builder().slice(dc, getDim(), offset, size));
    offset += size;
  }
  return success();
}

LogicalResult BroadcastOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (dc && e.needsGradient(getInput()))
    e.addGradient(getInput(),
                  e.builder().reduce(ReduceKind::sum, dc, getDims()));
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult TopKOp::buildGradient(GradientEmitter &e) {
  Value dw = e.getGradient(getWeights());
  if (!dw || !e.needsGradient(getScores()))
    return success();
  GraphBuilder &g = e.builder();
  e.addGradient(getScores(),
                TopKGradOp::create(g.builder(), g.getLoc(),
                                   getScores().getType(), dw,
                                   e.getForward(getIndices())));
  return success();
}

LogicalResult DispatchOp::buildGradient(GradientEmitter &e) {
  Value db = e.getGradient(getResult());
  if (!db || !e.needsGradient(getInput()))
    return success();
  GraphBuilder &g = e.builder();
  e.addGradient(getInput(), DispatchGradOp::create(
                                g.builder(), g.getLoc(), getInput().getType(),
                                db, e.getForward(getIndices())));
  return success();
}

LogicalResult CombineOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc)
    return success();
  GraphBuilder &g = e.builder();
  auto op = CombineGradOp::create(
      g.builder(), g.getLoc(), getInput().getType(), getWeights().getType(), dc,
      e.getForward(getInput()), e.getForward(getWeights()),
      e.getForward(getIndices()));
  if (e.needsGradient(getInput()))
    e.addGradient(getInput(), op.getExpertGrad());
  if (e.needsGradient(getWeights()))
    e.addGradient(getWeights(), op.getWeightGrad());
  return success();
}

//===----------------------------------------------------------------------===//
// Backward ops have no backward
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxGradOp::buildGradient(GradientEmitter &) {
  return noGradient(*this);
}
LogicalResult NormGradOp::buildGradient(GradientEmitter &) {
  return noGradient(*this);
}
LogicalResult EmbeddingGradOp::buildGradient(GradientEmitter &) {
  return noGradient(*this);
}
LogicalResult CrossEntropyGradOp::buildGradient(GradientEmitter &) {
  return noGradient(*this);
}
LogicalResult AttentionGradOp::buildGradient(GradientEmitter &) {
  return noGradient(*this);
}
LogicalResult TopKGradOp::buildGradient(GradientEmitter &) {
  return noGradient(*this);
}
LogicalResult DispatchGradOp::buildGradient(GradientEmitter &) {
  return noGradient(*this);
}
LogicalResult CombineGradOp::buildGradient(GradientEmitter &) {
  return noGradient(*this);
}
