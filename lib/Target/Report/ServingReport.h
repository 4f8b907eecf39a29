//===- ServingReport.h - Per-rank-class part of a serving report -*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_REPORT_SERVINGREPORT_H
#define STAGE_LIB_TARGET_REPORT_SERVINGREPORT_H

#include "ReportModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::stage::report {

/// Memory (weights, KV caches, working sets, the largest batch and context
/// that fit the device), FLOPs and bytes per phase, communication and
/// roofline time of each rank class of the serving program `fn`; for the
/// job, FLOPs per generated token, time to first token, time per output
/// token and tokens/s per GPU. `numbersOnly` (a search's estimate): of the
/// rank classes' memory the weights, the peak and the parameters, and of
/// the job its times.
LogicalResult buildServingReports(func::FuncOp fn, const sym::Bindings &b,
                                  bool numbersOnly, const DeviceModel &device,
                                  Report &report);

} // namespace mlir::stage::report

#endif // STAGE_LIB_TARGET_REPORT_SERVINGREPORT_H
