//===- Payload.cpp - What the payload of a linalg op computes -------------===//
//
// A payload is classified by its operations: one arith or math op of a known
// kind (addf, exp, tanh, ...), a recognizable composite (GELU by its tanh or
// erf constants, SiLU and sigmoid by their exponential), a multiply and an
// accumulate (a contraction), an accumulate (a sum), a max with the
// accumulator, or a plain yield. Anything else elementwise is a generic op
// costed one FLOP per arithmetic operation.
//
//===----------------------------------------------------------------------===//

#include "Payload.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::stage;

/// Casts between float widths do not count as work.
static bool isCast(Operation *op) {
  return isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp,
             arith::FPToSIOp, arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp,
             arith::BitcastOp>(op);
}

/// The block argument `v` is, looking through casts.
static std::optional<unsigned> argIndex(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isCast(def))
      return std::nullopt;
    v = def->getOperand(0);
  }
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getArgNumber();
  return std::nullopt;
}

static std::optional<EwiseKind> singleKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<EwiseKind>>(op)
      .Case<arith::AddFOp, arith::AddIOp>([](auto) { return EwiseKind::add; })
      .Case<arith::SubFOp, arith::SubIOp>([](auto) { return EwiseKind::sub; })
      .Case<arith::MulFOp, arith::MulIOp>([](auto) { return EwiseKind::mul; })
      .Case<arith::DivFOp>([](auto) { return EwiseKind::div; })
      .Case<arith::MaximumFOp, arith::MaxNumFOp>([](auto) { return EwiseKind::max; })
      .Case<arith::MinimumFOp, arith::MinNumFOp>([](auto) { return EwiseKind::min; })
      .Case<arith::NegFOp>([](auto) { return EwiseKind::neg; })
      .Case<math::ExpOp>([](auto) { return EwiseKind::exp; })
      .Case<math::LogOp>([](auto) { return EwiseKind::log; })
      .Case<math::SqrtOp>([](auto) { return EwiseKind::sqrt; })
      .Case<math::RsqrtOp>([](auto) { return EwiseKind::rsqrt; })
      .Case<math::TanhOp>([](auto) { return EwiseKind::tanh; })
      .Case<arith::SelectOp>([](auto) { return EwiseKind::select; })
      .Default([](Operation *) { return std::nullopt; });
}

/// A float constant of the payload equals `v` (to 1%: bf16 keeps 3 digits).
static bool hasConstant(ArrayRef<Operation *> ops, double v) {
  for (Operation *op : ops)
    if (auto c = dyn_cast<arith::ConstantOp>(op))
      if (auto f = dyn_cast<FloatAttr>(c.getValue()))
        if (std::abs(f.getValueAsDouble() - v) < 1e-2 * std::abs(v))
          return true;
  return false;
}

/// One function: a list of the payload forms recognized, tried in order on
/// one walk of the body.
Payload mlir::stage::classifyPayload(Block &body, unsigned numInputs) {
  Payload p;
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || yield.getNumOperands() != 1) {
    p.why = "its payload yields " +
            std::to_string(yield ? yield.getNumOperands() : 0) + " values";
    return p;
  }
  SmallVector<Operation *> ops, work;
  for (Operation &op : body.without_terminator()) {
    if (isa<linalg::IndexOp>(op)) {
      p.why = "its payload reads loop indices (linalg.index)";
      return p;
    }
    if (op.getNumRegions()) {
      p.why = "its payload has a nested region ('" +
              op.getName().getStringRef().str() + "')";
      return p;
    }
    if (!op.getDialect() ||
        !isa<arith::ArithDialect, math::MathDialect>(op.getDialect())) {
      p.why = "its payload uses '" + op.getName().getStringRef().str() + "'";
      return p;
    }
    // Constants hoisted out of the payload (by canonicalization) count as
    // its own when recognizing composites.
    for (Value v : op.getOperands())
      if (auto c = v.getDefiningOp<arith::ConstantOp>();
          c && c->getBlock() != &body)
        ops.push_back(c);
    ops.push_back(&op);
    if (!isa<arith::ConstantOp>(op) && !isCast(&op))
      work.push_back(&op);
  }
  Value out = yield.getOperand(0);
  unsigned acc = numInputs; // the output's block argument
  // A plain (possibly cast) copy of an input.
  if (std::optional<unsigned> a = argIndex(out); a && work.empty()) {
    if (*a < numInputs) {
      p.kind = PayloadKind::Copy;
      p.copied = *a;
      if (llvm::any_of(ops, isCast)) {
        p.kind = PayloadKind::Elementwise;
        p.ewise = EwiseKind::cast;
      }
      return p;
    }
  }
  // Reductions and contractions: the yield accumulates into the output.
  if (work.size() >= 1) {
    Operation *last = out.getDefiningOp();
    while (last && isCast(last))
      last = last->getOperand(0).getDefiningOp();
    bool readsAcc = llvm::any_of(body.getArgument(acc).getUsers(),
                                 [](Operation *) { return true; });
    if (last && readsAcc && last->getNumOperands() == 2) {
      std::optional<unsigned> l = argIndex(last->getOperand(0)),
                              r = argIndex(last->getOperand(1));
      bool accLeft = l == acc, accRight = r == acc;
      Value other = accLeft ? last->getOperand(1) : last->getOperand(0);
      if (accLeft || accRight) {
        if (isa<arith::AddFOp, arith::AddIOp>(last)) {
          Operation *mul = other.getDefiningOp();
          while (mul && isCast(mul))
            mul = mul->getOperand(0).getDefiningOp();
          if (work.size() == 2 && mul && isa<arith::MulFOp, arith::MulIOp>(mul) &&
              argIndex(mul->getOperand(0)) && argIndex(mul->getOperand(1))) {
            p.kind = PayloadKind::MulAdd;
            return p;
          }
          if (work.size() == 1 && argIndex(other)) {
            p.kind = PayloadKind::Sum;
            return p;
          }
        }
        if (isa<arith::MaximumFOp, arith::MaxNumFOp>(last) && work.size() == 1 &&
            argIndex(other)) {
          p.kind = PayloadKind::Max;
          return p;
        }
      }
    }
    if (readsAcc) {
      p.why = "its payload combines the output with its inputs in a way "
              "that is neither a sum, a max nor a multiply-accumulate";
      return p;
    }
  }
  // Elementwise.
  p.kind = PayloadKind::Elementwise;
  p.flops = int64_t(work.size());
  // One op of a known kind on inputs only (a scaling by a constant is a
  // generic op of one FLOP).
  auto onInputsOnly = [](Operation *op) {
    return llvm::all_of(op->getOperands(),
                        [](Value v) { return argIndex(v).has_value(); });
  };
  if (work.size() == 1 && onInputsOnly(work.front())) {
    Operation *op = work.front();
    SmallVector<unsigned> args;
    for (Value v : op->getOperands())
      args.push_back(*argIndex(v));
    std::optional<EwiseKind> k = singleKind(op);
    if (k == EwiseKind::mul && args[0] == args[1]) {
      p.ewise = EwiseKind::square;
      p.order = {args[0]};
      return p;
    }
    // Of the op's arity and reading inputs, not the initial output value.
    bool fits = k && EwiseOp::getArity(*k) == int(args.size()) &&
                llvm::all_of(args, [&](unsigned a) { return a < numInputs; });
    if (fits) {
      p.ewise = *k;
      p.order = args;
      return p;
    }
  }
  auto has = [&](auto isKind) { return llvm::any_of(work, isKind); };
  auto tanh = [](Operation *op) { return isa<math::TanhOp>(op); };
  auto erf = [](Operation *op) { return isa<math::ErfOp>(op); };
  auto exp = [](Operation *op) { return isa<math::ExpOp>(op); };
  auto neg = [](Operation *op) { return isa<arith::NegFOp>(op); };
  auto div = [](Operation *op) { return isa<arith::DivFOp>(op); };
  // GELU: the tanh form 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) or the
  // erf form 0.5x(1 + erf(x/sqrt(2))).
  if (numInputs == 1 &&
      ((has(tanh) && hasConstant(ops, 0.044715)) || has(erf))) {
    p.ewise = EwiseKind::gelu;
    return p;
  }
  // sigmoid: 1 / (1 + exp(-x)); SiLU multiplies (or divides) x by it.
  if (numInputs == 1 && has(exp) && has(neg) && has(div)) {
    bool scalesInput = llvm::any_of(body.getArgument(0).getUsers(), [](Operation *u) {
      return isa<arith::MulFOp, arith::DivFOp>(u);
    });
    p.ewise = scalesInput ? EwiseKind::silu : EwiseKind::sigmoid;
    return p;
  }
  p.ewise = EwiseKind::generic;
  return p;
}
