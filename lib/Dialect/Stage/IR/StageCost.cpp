//===- StageCost.cpp - FLOPs and bytes of every compute op ----------------===//
//
// docs/CostModel.md states each formula; keep the two in step.
//
//===----------------------------------------------------------------------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

static Expr elems(Value v) { return getTensorType(v).getNumElements(); }
static Expr bytesOf(Value v) { return getTensorType(v).getSizeInBytes(); }

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

std::optional<MatmulGrid> mlir::stage::getMatmulGrid(Operation *op) {
  auto einsum = dyn_cast<EinsumOp>(op);
  if (!einsum || einsum.getInputs().size() != 2)
    return std::nullopt;
  SmallVector<std::string> inputs = einsum.getInputIndices();
  SymTensorType result = einsum.getResult().getType();
  MatmulGrid g{Expr(1), Expr(1), Expr(1)};
  // Each result index's extent is the result's dimension it names.
  for (auto [i, c] : llvm::enumerate(einsum.getResultIndices())) {
    bool first = inputs[0].find(c) != std::string::npos;
    bool second = inputs[1].find(c) != std::string::npos;
    Expr &side = first && second ? g.batch : first ? g.rows : g.columns;
    side = side * result.getDim(i);
  }
  return g;
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

/// Scores of an attention: every query against every key, or against the
/// `window` keys before it.
static Expr scoreCount(SymTensorType q, SymTensorType k, ExprAttr window) {
  Expr keys = window ? window.getValue() : k.getDim(1);
  return q.getDim(0) * q.getDim(1) * keys * q.getDim(2);
}

// Q K^T and P V over the full score matrix (no causal discount), and the
// online softmax (scale, max, exp, sum) per score. Flash attention reads q,
// k, v once and writes the output.
// Values contribute the head dim they are read at (the result's); keys and
// values that are one operand (a cached latent) are read once.
Cost AttentionOp::getCost() {
  SymTensorType q = getQuery().getType(), k = getKey().getType(),
                o = getResult().getType();
  Expr scores = scoreCount(q, k, getWindowAttr());
  Expr bytes = operandAndResultBytes(*this);
  if (getKey() == getValue())
    bytes = bytes - bytesOf(getValue());
  // Soft-capping: divide, tanh, multiply per score.
  int64_t perScore = getSoftcap() ? 7 : 4;
  return {Expr(2) * scores * (q.getDim(3) + o.getDim(3)),
          Expr(perScore) * scores, bytes};
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
  Expr hidden =
      getResult().getType().getDim(getResult().getType().getRank() - 1);
  return {Expr(), Expr(2) * topk * hidden, operandAndResultBytes(*this)};
}

//===----------------------------------------------------------------------===//
// Training-step ops
//===----------------------------------------------------------------------===//

// A random draw and a compare-and-scale per element.
Cost DropoutOp::getCost() {
  return {Expr(), Expr(2) * elems(getInput()), operandAndResultBytes(*this)};
}

// y * (dy - sum(dy * y)): multiply, accumulate, subtract, multiply.
Cost SoftmaxGradOp::getCost() {
  return {Expr(), Expr(4) * elems(getGrad()), operandAndResultBytes(*this)};
}

// rms: recompute the normalized input and reduce dy * x_hat (6 per
// element) for dx, multiply-accumulate (2) for dw; layer norm needs two
// reductions for dx (9), and one add per element for the bias.
Cost NormGradOp::getCost() {
  bool rms = getKind() == NormKind::rms;
  int64_t perElement = rms ? 6 : 9;
  if (getWeight())
    perElement += 2;
  if (getWithBias())
    perElement += 1;
  return {Expr(), Expr(perElement) * elems(getInput()),
          operandAndResultBytes(*this)};
}

// Scatter-add of every gradient row into the zeroed table gradient.
Cost EmbeddingGradOp::getCost() {
  return {Expr(), elems(getGrad()), operandAndResultBytes(*this)};
}

// softmax of the logits (max, exp, sum, divide) and the one-hot subtract.
Cost CrossEntropyGradOp::getCost() {
  return {Expr(), Expr(5) * elems(getLogits()), operandAndResultBytes(*this)};
}

// Flash-attention backward: S = Q K^T again (recomputed), dV = P^T dO,
// dP = dO V^T, dQ = dS K, dK = dS^T Q; softmax gradient and exp per score.
Cost AttentionGradOp::getCost() {
  SymTensorType q = getQuery().getType(), k = getKey().getType(),
                v = getValue().getType();
  Expr scores = scoreCount(q, k, getWindowAttr());
  Expr dk = q.getDim(3), dv = v.getDim(3);
  Expr recompute = Expr(2) * scores * dk;
  // Soft-capping: the cap recomputed (3) and its tanh derivative (3).
  int64_t perScore = getSoftcap() ? 12 : 6;
  Cost c{Expr(2) * scores * (Expr(2) * dk + Expr(2) * dv) + recompute,
         Expr(perScore) * scores, operandAndResultBytes(*this), recompute};
  return c;
}

Cost TopKGradOp::getCost() {
  return {Expr(), elems(getGrad()), operandAndResultBytes(*this)};
}

// Each token sums its K rows of the buffer gradient.
Cost DispatchGradOp::getCost() {
  return {Expr(), elems(getGrad()), operandAndResultBytes(*this)};
}

// d expert outputs = weight * dy (one multiply per routed element); d
// weights = <dy, expert output> (a multiply-add per routed element).
Cost CombineGradOp::getCost() {
  return {Expr(), Expr(3) * elems(getExpertGrad()),
          operandAndResultBytes(*this)};
}

Cost PadOp::getCost() {
  return {Expr(), Expr(), operandAndResultBytes(*this)};
}

// The new positions are read once and written into the cache; the cached
// ones are read by the attention that consumes the view.
Cost CacheWriteOp::getCost() {
  return {Expr(), Expr(), Expr(2) * bytesOf(getInput())};
}

Cost OptimizerStepOp::getCost() {
  Expr n = elems(getWeight());
  Expr written = bytesOf(getWeight());
  for (Value v : {getMaster(), getExpAvg(), getExpAvgSq()})
    if (v)
      written += bytesOf(v);
  Expr read;
  for (Value v : getOperands())
    read += bytesOf(v);
  return {Expr(), Expr(getFlopsPerElement()) * n, read + written};
}

// Accumulating the per-micro-batch gradients: one add per element for every
// micro-batch after the first; read both, write the sum.
Cost MicrobatchesOp::getCost() {
  Expr elements, bytes;
  for (Value r : getResults()) {
    elements += elems(r);
    bytes += bytesOf(r);
  }
  Expr extra = getCount().getValue() - Expr(1);
  return {Expr(), extra * elements, Expr(3) * extra * bytes};
}
