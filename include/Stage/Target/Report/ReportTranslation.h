//===- ReportTranslation.h - stage IR to cost reports -----------*- C++ -*-===//

#ifndef STAGE_TARGET_REPORT_REPORTTRANSLATION_H
#define STAGE_TARGET_REPORT_REPORTTRANSLATION_H

namespace mlir::stage {

/// Registers `--stage-to-report`.
void registerToReportTranslation();

} // namespace mlir::stage

#endif // STAGE_TARGET_REPORT_REPORTTRANSLATION_H
