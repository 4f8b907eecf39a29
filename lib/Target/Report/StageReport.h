//===- StageReport.h - Per-rank-class part of the report --------*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_REPORT_STAGEREPORT_H
#define STAGE_LIB_TARGET_REPORT_STAGEREPORT_H

#include "ReportModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::stage::report {

/// Memory, FLOPs, communication and roofline time of each rank class of the
/// partitioned training step `fn`, and its pipeline with the timeline of
/// one iteration (numbers only and without a time past a memory limit,
/// as `request` says).
LogicalResult buildStageReports(func::FuncOp fn, const sym::Bindings &b,
                                const DeviceModel &device,
                                const ReportRequest &request, Report &report);

} // namespace mlir::stage::report

#endif // STAGE_LIB_TARGET_REPORT_STAGEREPORT_H
