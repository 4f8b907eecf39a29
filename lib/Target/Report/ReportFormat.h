//===- ReportFormat.h - Markdown and JSON renderings -------------*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_REPORT_REPORTFORMAT_H
#define STAGE_LIB_TARGET_REPORT_REPORTFORMAT_H

#include "ReportModel.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::stage::report {

void printMarkdown(const Report &report, llvm::raw_ostream &os);
void printJson(const Report &report, llvm::raw_ostream &os);

/// `8030261248` as `8.03 G`; exact values stay in the other column.
std::string humanReadable(const sym::Rational &v);
/// The exact decimal value (integers) or a 6-digit decimal (fractions).
std::string exactValue(const sym::Rational &v);

} // namespace mlir::stage::report

#endif // STAGE_LIB_TARGET_REPORT_REPORTFORMAT_H
