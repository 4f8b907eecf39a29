//===- StageCost.cpp - FLOPs and bytes of every compute op ----------------===//
//
// docs/CostModel.md states each formula; keep the two in step.
//
//===----------------------------------------------------------------------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

static SymTensorType tensorOf(Value v) { return cast<SymTensorType>(v.getType()); }
static Expr elems(Value v) { return tensorOf(v).getNumElements(); }
static Expr bytesOf(Value v) { return tensorOf(v).getSizeInBytes(); }

/// Bytes read from every operand plus bytes written to every result.
static Expr operandAndResultBytes(Operation *op) {
  Expr b;
  for (Value v : op->getOperands())
    b += bytesOf(v);
  for (Value v : op->getResults())
    b += bytesOf(v);
  return b;
}

Cost EinsumOp::getCost() {
  Expr points(1);
  for (auto &[c, extent] : getIndexExtents())
    points *= extent;
  Cost c{Expr(), Expr(), operandAndResultBytes(*this)};
  size_t n = getInputs().size();
  if (n >= 2)
    c.contractionFlops = Expr(int64_t(2 * (n - 1))) * points;
  else if (!getContractedIndices().empty())
    c.otherFlops = points; // a sum over the dropped indices
  return c;
}

Cost EwiseOp::getCost() {
  int64_t perElement = getKind() == EwiseKind::generic
                           ? getFlopsPerElement().value_or(1)
                           : getFlopsPerElement(getKind());
  return {Expr(), Expr(perElement) * elems(getResult()),
          operandAndResultBytes(*this)};
}

Cost ReduceOp::getCost() {
  return {Expr(), elems(getInput()), operandAndResultBytes(*this)};
}

// max, subtract-and-exp, sum, divide.
Cost SoftmaxOp::getCost() {
  return {Expr(), Expr(4) * elems(getInput()), operandAndResultBytes(*this)};
}

// rms: square, accumulate, scale; layer: accumulate the mean, subtract,
// square, accumulate, scale. Then one multiply for the weight, one add for
// the bias.
Cost NormOp::getCost() {
  int64_t perElement = getKind() == NormKind::rms ? 3 : 5;
  if (getWeight())
    ++perElement;
  if (getBias())
    ++perElement;
  return {Expr(), Expr(perElement) * elems(getInput()),
          operandAndResultBytes(*this)};
}

// x * cos + rotate(x) * sin.
Cost RopeOp::getCost() {
  return {Expr(), Expr(3) * elems(getInput()), operandAndResultBytes(*this)};
}

// A gather: reads the ids and the selected rows, writes the rows.
Cost EmbeddingOp::getCost() {
  return {Expr(), Expr(),
          bytesOf(getIds()) + Expr(2) * bytesOf(getResult())};
}

// log-softmax over the classes and the pick of the label: max, subtract-and-
// exp, sum per logit.
Cost CrossEntropyOp::getCost() {
  return {Expr(), Expr(4) * elems(getLogits()), operandAndResultBytes(*this)};
}

// Q K^T and P V over the full score matrix (no causal discount), and the
// online softmax (scale, max, exp, sum) per score. Flash attention reads q,
// k, v once and writes the output.
Cost AttentionOp::getCost() {
  SymTensorType q = tensorOf(getQuery()), k = tensorOf(getKey()),
             v = tensorOf(getValue());
  Expr scores = q.getDim(0) * q.getDim(1) * k.getDim(1) * q.getDim(2);
  return {Expr(2) * scores * (q.getDim(3) + v.getDim(3)), Expr(4) * scores,
          operandAndResultBytes(*this)};
}

// A view: no kernel runs.
Cost ReshapeOp::getCost() { return {Expr(), Expr(), Expr()}; }

Cost TransposeOp::getCost() {
  return {Expr(), Expr(), operandAndResultBytes(*this)};
}

Cost SliceOp::getCost() {
  return {Expr(), Expr(), Expr(2) * bytesOf(getResult())};
}

Cost ConcatOp::getCost() {
  return {Expr(), Expr(), operandAndResultBytes(*this)};
}

Cost BroadcastOp::getCost() {
  return {Expr(), Expr(), operandAndResultBytes(*this)};
}

// One pass of comparisons over the scores.
Cost TopKOp::getCost() {
  return {Expr(), elems(getScores()), operandAndResultBytes(*this)};
}

// A copy of each token to its experts' buffers.
Cost DispatchOp::getCost() {
  return {Expr(), Expr(), operandAndResultBytes(*this)};
}

// Each token: K multiply-adds of expert outputs by their gate weights.
Cost CombineOp::getCost() {
  Expr topk = elems(getIndices());
  Expr hidden = tensorOf(getResult()).getDim(tensorOf(getResult()).getRank() - 1);
  return {Expr(), Expr(2) * topk * hidden, operandAndResultBytes(*this)};
}
