//===- ReportTranslation.h - stage IR to cost reports -----------*- C++ -*-===//

#ifndef STAGE_TARGET_REPORT_REPORTTRANSLATION_H
#define STAGE_TARGET_REPORT_REPORTTRANSLATION_H

namespace mlir::stage {

/// Registers `--stage-to-report`.
void registerToReportTranslation();

/// Whether a report was written over its `--fail-if-over` limit: the tool
/// keeps the report (a translation that fails writes nothing) and exits
/// non-zero.
bool reportWasOverLimit();

} // namespace mlir::stage

#endif // STAGE_TARGET_REPORT_REPORTTRANSLATION_H
