//===- ReportFormat.h - Renderings of a report ------------------*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_REPORT_REPORTFORMAT_H
#define STAGE_LIB_TARGET_REPORT_REPORTFORMAT_H

#include "ReportModel.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::stage::report {

void printMarkdown(const Report &report, llvm::raw_ostream &os);
void printJson(const Report &report, llvm::raw_ostream &os);
/// One row per number: scope, section, key, label, unit, value, expression;
/// scopes start with `scopePrefix`; the header row unless `header` is false.
void printCsv(const Report &report, llvm::raw_ostream &os,
              llvm::StringRef scopePrefix = "", bool header = true);
/// A self-contained page: tables and inline SVG charts (ReportHtml.cpp).
void printHtml(const Report &report, llvm::raw_ostream &os);
/// One page of several reports, each under its title.
void printHtml(llvm::ArrayRef<std::pair<std::string, const Report *>> parts,
               llvm::raw_ostream &os);

/// `8030261248` as `8.030 G`, seconds as `12.3 ms`; exact values stay in
/// the other column.
std::string humanReadable(const sym::Rational &v, llvm::StringRef unit);
/// The exact decimal value (integers) or a 6-digit decimal (fractions).
std::string exactValue(const sym::Rational &v);
/// The GPUs of a step, its grid, and how its `ep` relates to Megatron-LM's
/// data parallelism, in a sentence or three.
std::string describeJob(const JobReport &job);
/// The rows of the stage sections, in first-seen order across stages.
std::vector<std::pair<std::string, std::string>>
stageRowKeys(const Report &report, llvm::StringRef section);

} // namespace mlir::stage::report

#endif // STAGE_LIB_TARGET_REPORT_REPORTFORMAT_H
