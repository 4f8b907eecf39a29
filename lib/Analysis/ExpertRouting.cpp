//===- ExpertRouting.cpp - What routing does to an op's time --------------===//

#include "Stage/Analysis/ExpertRouting.h"

#include "Stage/Analysis/Bindings.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Support/Routing.h"

#include <cmath>
#include <map>
#include <mutex>

using namespace mlir;
using namespace mlir::stage;

static sym::Expr typeBytes(Type t) {
  auto st = dyn_cast<SymTensorType>(t);
  return st ? st.getNumElements() * sym::Expr(st.getElementBytes())
            : sym::Expr();
}

static std::optional<sym::Expr> perExpertRows(Type t) {
  if (auto st = dyn_cast<SymTensorType>(t))
    for (const sym::Expr &d : st.getDims())
      if (isPerExpertAverage(d))
        return d;
  return std::nullopt;
}

std::optional<RoutedOp> mlir::stage::getRoutedOp(Operation *op) {
  std::optional<sym::Expr> rows;
  for (Type t : llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
    if ((rows = perExpertRows(t)))
      break;
  if (!rows)
    return std::nullopt;
  RoutedOp r{*rows, sym::Expr()};
  // An expert contraction's operands and results without per-expert rows
  // hold every expert of the rank: its weight, or its weight gradient.
  if (isa<EinsumOp>(op))
    for (Type t :
         llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
      if (!perExpertRows(t))
        r.expertBytes += typeBytes(t);
  return r;
}

struct RoutingModel::Impl {
  ::stage::Routing routing;
  /// Effects by (E, K, ep, tokens x 1000): a model's ops share a few, and
  /// one may be sampled (Routing.h). Searches evaluate on several threads.
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>,
                   ::stage::RoutingEffect>
      effects;
  mutable std::map<int64_t, std::vector<double>> shares;
  mutable std::mutex mutex;

  ::stage::RoutingEffect effect(double E, double K, double ep,
                                double tokens) const {
    auto key = std::make_tuple(int64_t(E), int64_t(K), int64_t(ep),
                               int64_t(std::llround(tokens * 1000)));
    std::lock_guard<std::mutex> lock(mutex);
    auto it = effects.find(key);
    if (it != effects.end())
      return it->second;
    auto s = shares.find(int64_t(E));
    if (s == shares.end()) {
      std::string error;
      std::optional<std::vector<double>> p =
          routing.shares(int64_t(E), error);
      s = shares.emplace(int64_t(E), p ? *p : std::vector<double>()).first;
    }
    ::stage::RoutingEffect e = ::stage::getRoutingEffect(
        s->second, int64_t(K), int64_t(ep), tokens);
    if (effects.size() > 100000)
      effects.clear();
    effects.emplace(key, e);
    return e;
  }
};

RoutingModel::RoutingModel(Operation *op) : impl(std::make_unique<Impl>()) {
  std::string error;
  if (std::optional<::stage::Routing> r =
          ::stage::Routing::parse(getRoutingSpec(op), error))
    impl->routing = *r;
}
RoutingModel::~RoutingModel() = default;
RoutingModel::RoutingModel(RoutingModel &&) = default;

static bool usable(double x) { return std::isfinite(x) && x > 0; }

void RoutingModel::apply(double E, double K, double ep, double rows,
                         double expertBytes, double &contraction,
                         double &other, double &bytes) const {
  if (!usable(E) || !usable(K) || !usable(rows) || K > E)
    return;
  if (!usable(ep))
    ep = 1;
  ::stage::RoutingEffect e = impl->effect(E, K, ep, rows * E / K);
  // The busiest rank does `busiest` times the mean rank's token work and
  // reads the experts it reaches.
  double tokenBytes = std::max(0.0, bytes - expertBytes);
  contraction *= e.busiest;
  other *= e.busiest;
  bytes = tokenBytes * e.busiest + expertBytes * e.reachedBusiest;
}

double RoutingModel::reached(double E, double K, double ep,
                             double rows) const {
  if (!usable(E) || !usable(K) || !usable(rows) || K > E)
    return 1;
  return impl->effect(E, K, usable(ep) ? ep : 1, rows * E / K).reached;
}

/// `symbol`'s value under `b`, NaN when unbound.
static double valueOf(const sym::Bindings &b, const char *symbol) {
  auto it = b.find(symbol);
  return it == b.end() ? NAN : double(it->second);
}

static double valueOf(const sym::Bindings &b, const sym::Expr &e) {
  sym::Result<sym::Rational> v = e.evaluateRational(b);
  return v ? v->toDouble() : NAN;
}

void RoutingModel::applyUnder(const sym::Bindings &b, const RoutedOp &op,
                              double runs, double &contraction, double &other,
                              double &bytes) const {
  double expert = valueOf(b, op.expertBytes);
  apply(valueOf(b, "E"), valueOf(b, "K"), valueOf(b, "ep"),
        valueOf(b, op.rowsPerExpert), std::isfinite(expert) ? expert * runs : 0,
        contraction, other, bytes);
}

double RoutingModel::reachedUnder(const sym::Bindings &b,
                                  const RoutedOp &op) const {
  return reached(valueOf(b, "E"), valueOf(b, "K"), valueOf(b, "ep"),
                 valueOf(b, op.rowsPerExpert));
}

