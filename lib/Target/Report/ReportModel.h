//===- ReportModel.h - What a report says, independent of format -*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_REPORT_REPORTMODEL_H
#define STAGE_LIB_TARGET_REPORT_REPORTMODEL_H

#include "Stage/Support/SymExpr.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir::stage::report {

/// One number of the report: symbolic and bound.
struct Quantity {
  std::string key;   // JSON key, snake_case
  std::string label; // table label
  std::string unit;  // "FLOP", "B"
  sym::Expr expr;
  sym::Rational value;
};

struct Section {
  std::string key;
  std::string title;
  std::vector<Quantity> rows;
};

struct FunctionReport {
  std::string name;
  std::vector<Section> sections;
};

struct Report {
  sym::Bindings bindings;
  std::vector<FunctionReport> functions;
};

/// Builds the report of every function of `module` under `bindings`.
FailureOr<Report> buildReport(ModuleOp module, const sym::Bindings &bindings);

} // namespace mlir::stage::report

#endif // STAGE_LIB_TARGET_REPORT_REPORTMODEL_H
