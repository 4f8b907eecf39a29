//===- StageSSM.cpp - State-space ops: conv1d and the selective scan ------===//
//
// Verifiers, costs (docs/CostModel.md), gradients and sharding rules of the
// ops of Mamba and Mamba-2 layers, kept together: one concern.
//
//===----------------------------------------------------------------------===//

#include "Stage/Dialect/Stage/IR/StageBuilder.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

static Expr elems(Value v) { return getTensorType(v).getNumElements(); }

static Expr operandAndResultBytes(Operation *op) {
  Expr b;
  for (Value v : op->getOperands())
    b += getTensorType(v).getSizeInBytes();
  for (Value v : op->getResults())
    b += getTensorType(v).getSizeInBytes();
  return b;
}

static std::string shapeStr(SymTensorType t) {
  std::string s = "[";
  for (unsigned i = 0; i < t.getRank(); ++i)
    s += (i ? ", " : "") + t.getDim(i).str();
  return s + "]";
}

//===----------------------------------------------------------------------===//
// conv1d
//===----------------------------------------------------------------------===//

/// `input [batch, seq, channels...]` and `weight [channels..., K]`.
static LogicalResult verifyConv(Operation *op, SymTensorType in,
                                SymTensorType w) {
  if (in.getRank() < 3)
    return op->emitOpError("input must be [batch, seq, channels...], got ")
           << shapeStr(in);
  SmallVector<Expr> expected(ArrayRef<Expr>(in.getDims()).drop_front(2));
  if (w.getRank() != expected.size() + 1 ||
      ArrayRef<Expr>(w.getDims()).drop_back() != ArrayRef<Expr>(expected)) {
    std::string channels = shapeStr(in.withDims(expected));
    channels.pop_back(); // "[Di, K]": the channels, then the taps
    return op->emitOpError("weight ")
           << shapeStr(w) << " must be the input's channels and the taps, "
           << channels << ", K]";
  }
  return success();
}

LogicalResult Conv1dOp::verify() {
  if (getResult().getType().getDims() != getInput().getType().getDims())
    return emitOpError("result must have the input's shape");
  return verifyConv(*this, getInput().getType(), getWeight().getType());
}

LogicalResult Conv1dGradOp::verify() {
  if (getInputGrad().getType().getDims() != getInput().getType().getDims() ||
      getWeightGrad().getType().getDims() != getWeight().getType().getDims() ||
      getGrad().getType().getDims() != getInput().getType().getDims())
    return emitOpError("each gradient must have its input's shape");
  return verifyConv(*this, getInput().getType(), getWeight().getType());
}

static Expr taps(Value weight) {
  SymTensorType w = getTensorType(weight);
  return w.getDim(w.getRank() - 1);
}

/// The elements of a carried state: per sequence of `x [batch, seq,
/// channels...]`, `perChannel` values for each channel.
static Expr stateElements(Value x, const Expr &perChannel) {
  SymTensorType t = getTensorType(x);
  Expr n = t.getDim(0) * perChannel;
  for (unsigned d = 2; d < t.getRank(); ++d)
    n *= t.getDim(d);
  return n;
}

/// A carried state read at the start of a call and written at its end.
static Expr stateTraffic(Value x, const Expr &perChannel) {
  return Expr(2 * getTensorType(x).getElementBytes()) *
         stateElements(x, perChannel);
}

// A multiply-add per tap and output element.
Cost Conv1dOp::getCost() {
  Expr bytes = operandAndResultBytes(*this);
  if (getState())
    bytes += stateTraffic(getInput(), taps(getWeight()) - Expr(1));
  return {Expr(), Expr(2) * taps(getWeight()) * elems(getResult()), bytes};
}

// As many again for the input gradient and for the taps'.
Cost Conv1dGradOp::getCost() {
  return {Expr(), Expr(4) * taps(getWeight()) * elems(getInput()),
          operandAndResultBytes(*this)};
}

LogicalResult Conv1dOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc)
    return success();
  GraphBuilder &g = e.builder();
  if (getState())
    return emitOpError("carries a serving state: it has no gradient");
  auto op = Conv1dGradOp::create(
      g.builder(), g.getLoc(), getInput().getType(), getWeight().getType(),
      e.getForward(getInput()), e.getForward(getWeight()), dc);
  if (e.needsGradient(getInput()))
    e.addGradient(getInput(), op.getInputGrad());
  if (e.needsGradient(getWeight()))
    e.addGradient(getWeight(), op.getWeightGrad());
  return success();
}

LogicalResult Conv1dGradOp::buildGradient(GradientEmitter &) {
  return emitOpError("has no gradient rule (it is itself a backward op)");
}

/// Channels split with the weight; the taps never. The sequence may be
/// split (the K - 1 positions of the neighbouring shard are not modeled).
static FactorModel convRule(unsigned inputRank, bool gradient) {
  FactorModel m;
  SmallVector<int> x = m.addFactors(inputRank);
  int fk = m.addFactor();
  m.freeze(fk);
  SmallVector<int> w(ArrayRef<int>(x).drop_front(2));
  w.push_back(fk);
  if (!gradient) {
    m.operands = {x, w};
    m.results = {x};
    return m;
  }
  m.operands = {x, w, x};
  m.results = {x, w};
  m.summable.set(x[0]); // the taps' gradient sums over batch and sequence
  m.summable.set(x[1]);
  return m;
}

FactorModel Conv1dOp::getShardingRule(const ShardingRuleOptions &) {
  return convRule(getInput().getType().getRank(), false);
}

FactorModel Conv1dGradOp::getShardingRule(const ShardingRuleOptions &) {
  return convRule(getInput().getType().getRank(), true);
}

//===----------------------------------------------------------------------===//
// ssm_scan
//===----------------------------------------------------------------------===//

namespace {
/// The dimensions of a scan, by form.
struct ScanShape {
  bool chunked, delta;
  Expr batch, seq, channels, headDim, groups, state;
};
} // namespace

static FailureOr<ScanShape> readScan(Operation *op, Value x, Value dt, Value a,
                                     Value b, Value c, Value d, ExprAttr chunk,
                                     bool delta) {
  SymTensorType xt = getTensorType(x), dtt = getTensorType(dt),
                at = getTensorType(a), bt = getTensorType(b),
                ct = getTensorType(c), skip = getTensorType(d);
  auto expect = [&](StringRef name, SymTensorType t,
                    ArrayRef<Expr> dims) -> LogicalResult {
    if (t.getDims() == dims)
      return success();
    return op->emitOpError(name) << " must be " << shapeStr(t.withDims(dims))
                                 << ", got " << shapeStr(t);
  };
  if (bt.getRank() < 3)
    return op->emitOpError("B must be [batch, seq, (groups,) N], got ")
           << shapeStr(bt);
  ScanShape s;
  s.chunked = xt.getRank() == 4;
  if (xt.getRank() != 3 && !s.chunked)
    return op->emitOpError("input must be [batch, seq, channels] (selective) "
                           "or [batch, seq, heads, head_dim] (chunked), got ")
           << shapeStr(xt);
  if (s.chunked != bool(chunk))
    return op->emitOpError(s.chunked ? "with heads needs a chunk size"
                                     : "selective form takes no chunk size");
  s.delta = delta;
  if (delta && !s.chunked)
    return op->emitOpError("delta rule needs heads and a chunk size "
                           "(the chunked form's shapes)");
  s.batch = xt.getDim(0);
  s.seq = xt.getDim(1);
  s.channels = xt.getDim(2);
  s.state = bt.getDim(bt.getRank() - 1);
  if (s.chunked) {
    s.headDim = xt.getDim(3);
    s.groups = bt.getDim(2);
    if (failed(expect("dt", dtt, {s.batch, s.seq, s.channels})) ||
        failed(expect("A", at, {s.channels})) ||
        failed(expect("B", bt, {s.batch, s.seq, s.groups, s.state})))
      return failure();
  } else {
    s.headDim = Expr(1);
    s.groups = Expr(1);
    if (failed(expect("dt", dtt, xt.getDims())) ||
        failed(expect("A", at, {s.channels, s.state})) ||
        failed(expect("B", bt, {s.batch, s.seq, s.state})))
      return failure();
  }
  if (failed(expect("C", ct, bt.getDims())))
    return failure();
  if (delta)
    return failed(expect("beta", skip, {s.batch, s.seq, s.channels}))
               ? FailureOr<ScanShape>(failure())
               : FailureOr<ScanShape>(s);
  if (failed(expect("D", skip, {s.channels})))
    return failure();
  return s;
}

LogicalResult SsmScanOp::verify() {
  if (getResult().getType().getDims() != getInput().getType().getDims())
    return emitOpError("result must have the input's shape");
  return readScan(*this, getInput(), getDt(), getA(), getB(), getC(), getD(),
                  getChunkAttr(), getDelta());
}

LogicalResult SsmScanGradOp::verify() {
  SmallVector<Value> ins = {getInput(), getDt(), getA(), getB(),
                            getC(),     getD()};
  for (auto [in, grad] : llvm::zip(ins, getResults()))
    if (getTensorType(in).getDims() != getTensorType(grad).getDims())
      return emitOpError("each gradient must have its input's shape");
  if (getGrad().getType().getDims() != getInput().getType().getDims())
    return emitOpError("the output gradient must have the input's shape");
  return readScan(*this, getInput(), getDt(), getA(), getB(), getC(), getD(),
                  getChunkAttr(), getDelta());
}

/// The forward scan: selective, 9 FLOPs per (token, channel, state) (the
/// discretization exp(dt A) and dt B x, the state update, its read-out by
/// C); chunked, the SSD matrices per token (C B^T within the chunk per
/// group, its product with x per head, the chunk's state and its read-out
/// per head) and the decay mask (2 per token, head and chunk position).
/// Both: the skip D x, a multiply-add per element of x. A = -exp(a) is a
/// few FLOPs per call, not counted.
static Cost scanCost(Operation *op, const ScanShape &s, ExprAttr chunk) {
  Expr tokens = s.batch * s.seq;
  Expr bytes = operandAndResultBytes(op);
  Expr skip = Expr(2) * tokens * s.channels * s.headDim;
  if (!s.chunked)
    return {Expr(), Expr(9) * tokens * s.channels * s.state + skip, bytes};
  Expr Q = chunk.getValue();
  if (s.delta) {
    // Per token and head: K K^T, W and Q K^T; U and the masked product
    // with x; W S, Q S and the state's update. Vector: the triangular
    // solve, the decay mask, beta's scaling of k and x.
    Expr N = s.state, P = s.headDim;
    Expr matrix = Expr(6) * Q * N + Expr(4) * Q * P + Expr(6) * N * P;
    Expr vector = Expr(sym::Rational(sym::BigInt(2), sym::BigInt(3))) * Q * Q +
                  Expr(2) * Q + N + P;
    return {tokens * s.channels * matrix, tokens * s.channels * vector, bytes};
  }
  Expr perToken = Expr(2) * Q * s.state * s.groups +
                  Expr(2) * Q * s.headDim * s.channels +
                  Expr(4) * s.state * s.headDim * s.channels;
  return {tokens * perToken, Expr(2) * tokens * s.channels * Q + skip, bytes};
}

Cost SsmScanOp::getCost() {
  FailureOr<ScanShape> s = readScan(*this, getInput(), getDt(), getA(), getB(),
                                    getC(), getD(), getChunkAttr(), getDelta());
  if (failed(s))
    return Cost();
  Cost c = scanCost(*this, *s, getChunkAttr());
  if (getState())
    c.bytes += stateTraffic(getInput(), s->state);
  return c;
}

// Selective: the fused kernel recomputes the forward states (9) and runs
// the reverse recurrence with its five gradients (18). Chunked: twice the
// forward's work.
Cost SsmScanGradOp::getCost() {
  FailureOr<ScanShape> s = readScan(*this, getInput(), getDt(), getA(), getB(),
                                    getC(), getD(), getChunkAttr(), getDelta());
  if (failed(s))
    return Cost();
  Cost f = scanCost(*this, *s, getChunkAttr());
  if (!s->chunked)
    return {Expr(), Expr(3) * f.otherFlops, operandAndResultBytes(*this)};
  return {Expr(2) * f.contractionFlops, Expr(2) * f.otherFlops,
          operandAndResultBytes(*this)};
}

LogicalResult SsmScanOp::buildGradient(GradientEmitter &e) {
  Value dc = e.getGradient(getResult());
  if (!dc)
    return success();
  if (getState())
    return emitOpError("carries a serving state: it has no gradient");
  GraphBuilder &g = e.builder();
  SmallVector<Value> ins = {getInput(), getDt(), getA(),
                            getB(),     getC(),  getD()};
  SmallVector<Type> types;
  SmallVector<Value> fwd;
  for (Value v : ins) {
    types.push_back(v.getType());
    fwd.push_back(e.getForward(v));
  }
  auto op = SsmScanGradOp::create(g.builder(), g.getLoc(), types, fwd[0],
                                  fwd[1], fwd[2], fwd[3], fwd[4], fwd[5], dc,
                                  getChunkAttr(), getDeltaAttr());
  for (auto [in, grad] : llvm::zip(ins, op.getResults()))
    if (e.needsGradient(in))
      e.addGradient(in, grad);
  return success();
}

LogicalResult SsmScanGradOp::buildGradient(GradientEmitter &) {
  return emitOpError("has no gradient rule (it is itself a backward op)");
}

/// Channels (heads) split, as Megatron's Mamba layers split them over
/// tensor-parallel ranks, with their groups of B and C when there are
/// several (a single group is shared by every rank); batch split; the
/// sequence, the state and the head dim never (the scan runs along the
/// sequence: context parallelism gathers it).
static FactorModel scanRule(bool chunked, bool sharedGroup, bool delta,
                            bool gradient) {
  FactorModel m;
  int fb = m.addFactor(), fs = m.addFactor(), fc = m.addFactor(),
      fn = m.addFactor();
  m.freeze(fs);
  m.freeze(fn);
  SmallVector<int> x, dt, a, b;
  if (chunked) {
    int fp = m.addFactor();
    m.freeze(fp);
    int fg = fc;
    if (sharedGroup) {
      fg = m.addFactor();
      m.freeze(fg);
    }
    x = {fb, fs, fc, fp};
    dt = {fb, fs, fc};
    a = {fc};
    b = {fb, fs, fg, fn};
  } else {
    x = {fb, fs, fc};
    dt = x;
    a = {fc, fn};
    b = {fb, fs, fn};
  }
  // D, one per head; the delta rule's beta, one per token and head.
  SmallVector<int> d = delta ? dt : SmallVector<int>{fc};
  m.operands = {x, dt, a, b, b, d};
  if (!gradient) {
    m.results = {x};
    return m;
  }
  m.operands.push_back(x);
  m.results = {x, dt, a, b, b, d};
  // A's and D's gradients sum over batch and sequence; B's and C's over
  // the channels (heads) that share them.
  m.summable.set(fb);
  m.summable.set(fs);
  if (!chunked || sharedGroup)
    m.summable.set(fc);
  return m;
}

static bool singleGroup(Value b) {
  SymTensorType t = getTensorType(b);
  return t.getRank() == 4 && t.getDim(2) == Expr(1);
}

FactorModel SsmScanOp::getShardingRule(const ShardingRuleOptions &) {
  return scanRule(getInput().getType().getRank() == 4, singleGroup(getB()),
                  getDelta(), false);
}

FactorModel SsmScanGradOp::getShardingRule(const ShardingRuleOptions &) {
  return scanRule(getInput().getType().getRank() == 4, singleGroup(getB()),
                  getDelta(), true);
}
