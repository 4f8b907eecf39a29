//===- RequestReport.h - A request stream through a serving program -*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_REPORT_REQUESTREPORT_H
#define STAGE_LIB_TARGET_REPORT_REQUESTREPORT_H

#include "ReportModel.h"

#include "Stage/Target/Report/StepEstimate.h"

namespace mlir::stage::report {

/// Serves the workload with `fn` (a continuous-batching program on one
/// pipeline stage, `gpus` GPUs per replica) under `b` on `device`: the
/// scheduler's iterations timed by the compiled step at each mix, the KV
/// cache sized from the device's memory less the weights and the largest
/// iteration's working set.
FailureOr<RequestsReport> buildRequestsReport(func::FuncOp fn,
                                              const sym::Bindings &b,
                                              const DeviceModel &device,
                                              int64_t gpus,
                                              const RequestStreamOptions &o);

} // namespace mlir::stage::report

#endif // STAGE_LIB_TARGET_REPORT_REQUESTREPORT_H
