//===- ReportSections.h - Building the sections of a report -----*- C++ -*-===//
//
// What the per-rank parts of the training and serving reports share: a
// section builder that evaluates each row, the names of communication rows,
// and the roofline time of each phase of a chunk.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_REPORT_REPORTSECTIONS_H
#define STAGE_LIB_TARGET_REPORT_REPORTSECTIONS_H

#include "ReportModel.h"

#include "Stage/Analysis/CommAnalysis.h"
#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Analysis/RankClasses.h"

namespace mlir::stage::report {

/// A time as the exact fraction the report prints (whole nanoseconds), or
/// nullopt when it is not finite, negative, or 2^63 ns (292 years) or more.
std::optional<sym::Rational> exactSeconds(double seconds);
/// A rate or count rounded to a whole number, or nullopt when it is not
/// finite, negative, or 2^63 or more.
std::optional<sym::Rational> roundedCount(double x);

/// Collects the rows of a section, evaluating each expression.
class SectionBuilder {
public:
  SectionBuilder(Operation *at, const sym::Bindings &b, std::string key,
                 std::string title)
      : at(at), b(b), section{std::move(key), std::move(title), {}} {
    // Most sections have a few rows: one allocation, no moves of rows.
    section.rows.reserve(8);
  }

  void add(std::string key, std::string label, std::string unit,
           const sym::Expr &e) {
    if (failed)
      return;
    sym::Result<sym::Rational> v = e.evaluateRational(b);
    if (!v) {
      at->emitError(label) << ": " << v.error();
      failed = true;
      return;
    }
    section.rows.push_back({std::move(key), std::move(label), std::move(unit),
                            e, *v});
  }
  void addValue(std::string key, std::string label, std::string unit,
                sym::Rational v) {
    section.rows.push_back(
        {std::move(key), std::move(label), std::move(unit), std::nullopt, v});
  }
  /// A time (nanoseconds as an exact fraction: rounding is below any
  /// reading); one that does not fit is an error naming it, as the
  /// emitter's counts are.
  void addSeconds(std::string key, std::string label, double seconds) {
    addChecked(std::move(key), std::move(label), "s", exactSeconds(seconds),
               seconds);
  }
  /// A rate or count computed in floating point, rounded; checked alike.
  void addRounded(std::string key, std::string label, std::string unit,
                  double x) {
    addChecked(std::move(key), std::move(label), std::move(unit),
               roundedCount(x), x);
  }
  FailureOr<Section> take() {
    if (failed)
      return failure();
    return std::move(section);
  }

private:
  void addChecked(std::string key, std::string label, std::string unit,
                  std::optional<sym::Rational> v, double x);

  Operation *at;
  const sym::Bindings &b;
  Section section;
  bool failed = false;
};

/// "0-15, 32-47": the layers of a rank class's chunks.
std::string layerRanges(const RankClass &c);
/// "all-reduce over tp", "send on pp".
std::string commLabel(const CommVolume &v);
/// "all_reduce_tp".
std::string commKey(const CommVolume &v);

/// Roofline seconds of the compute and communication of each phase.
struct PhaseTimes {
  double compute[kNumPhases] = {};
  double comm[kNumPhases] = {};
  /// Of `comm`: ZeRO-3's parameter gathers and gradient reduce-scatters in
  /// the micro-batch loop, per phase; the gradient reductions after the
  /// loop (counted in the forward phase).
  double zero3[kNumPhases] = {};
  /// Of `zero3`: what the prefetch does not hide, per phase (forward;
  /// backward with its recomputation): a micro-batch's pass through the
  /// region run with its gathers one layer ahead, less its other work.
  double zero3Exposed[kNumPhases] = {};
  double reductions = 0;
  double of(Phase p) const {
    return compute[unsigned(p)] + comm[unsigned(p)];
  }
};

/// The roofline time of each phase of `chunk`'s ops; errors at the op whose
/// size does not evaluate.
FailureOr<PhaseTimes> phaseTimes(Operation *chunk, const sym::Bindings &b,
                                 const DeviceModel &d);

/// The phase costs of a rank class's chunks, summed.
PhaseCosts sumPhaseCosts(ArrayRef<Operation *> chunks);

} // namespace mlir::stage::report

#endif // STAGE_LIB_TARGET_REPORT_REPORTSECTIONS_H
