//===- ReportSections.cpp - Building the sections of a report -------------===//

#include "ReportSections.h"

#include "Stage/Analysis/StepTimes.h"

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
  // An op's roofline time over all its executions: exact unless a decode
  // step's op turns from compute- to memory-bound as its context grows.
  if (failed(walkRooflineSeconds(chunk, b, d, [&](Operation *op, double sec) {
        unsigned phase = unsigned(getPhase(op));
        bool comm = isa<CollectiveOpInterface>(op);
        (comm ? t.comm : t.compute)[phase] += sec;
        if (!comm)
          return;
        bool inLoop = op->getParentOfType<MicrobatchesOp>() != nullptr;
        if (inLoop && (isParameterGather(op) || isGradientScatter(op)))
          t.zero3[phase] += sec;
        if (!inLoop && op->getParentOp() == chunk &&
            isa<AllReduceOp, ReduceScatterOp>(op))
          t.reductions += sec;
      })))
    return failure();
  return t;
}

