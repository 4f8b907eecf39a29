//===- ReportSections.cpp - Building the sections of a report -------------===//

#include "ReportSections.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

std::string mlir::stage::report::layerRanges(const RankClass &c) {
  std::string s;
  for (auto [begin, end] : c.layers)
    s += (s.empty() ? "" : ", ") + std::to_string(begin) + "-" +
         std::to_string(end - 1);
  return s;
}

std::string mlir::stage::report::commLabel(const CommVolume &v) {
  std::string kind = v.kind;
  std::replace(kind.begin(), kind.end(), '_', '-');
  if (v.kind == "send" || v.kind == "recv")
    return kind + " on " + llvm::join(v.axes, ", ");
  return kind + " over " + llvm::join(v.axes, ", ");
}

std::string mlir::stage::report::commKey(const CommVolume &v) {
  return v.kind + "_" + llvm::join(v.axes, "_");
}

FailureOr<PhaseTimes>
mlir::stage::report::phaseTimes(Operation *chunk, const sym::Bindings &b,
                                 const DeviceModel &d) {
  PhaseTimes t;
  bool bad = false;
  auto value = [&](Operation *op, const sym::Expr &e) -> double {
    sym::Result<sym::Rational> v = e.evaluateRational(b);
    if (!v) {
      op->emitError("time estimate: ") << v.error();
      bad = true;
      return 0;
    }
    return v->toDouble();
  };
  // An op's roofline time over all its executions: exact unless a decode
  // step's op turns from compute- to memory-bound as its context grows.
  walkWithCounts(chunk, [&](Operation *op, const Multiplicity &n) {
    if (bad)
      return;
    unsigned phase = unsigned(getPhase(op));
    if (auto comm = dyn_cast<CollectiveOpInterface>(op)) {
      t.comm[phase] += value(op, n.of(getSentBytes(comm))) / d.linkBytes;
      return;
    }
    if (auto c = dyn_cast<CostOpInterface>(op)) {
      Cost cost = n.of(c.getCost());
      t.compute[phase] += d.seconds(value(op, cost.contractionFlops),
                                    value(op, cost.otherFlops),
                                    value(op, cost.bytes));
    }
  });
  if (bad)
    return failure();
  return t;
}

