//===- DisaggregatedReport.h - Reports of a run's rank groups ---*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_REPORT_DISAGGREGATEDREPORT_H
#define STAGE_LIB_TARGET_REPORT_DISAGGREGATEDREPORT_H

#include "ReportModel.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

namespace mlir::stage::report {

/// One rank group of a disaggregated serving run and its report.
struct GroupReport {
  std::string name; // prefill, decode
  int64_t firstRank = 0;
  Report report;
};

/// The report of each group under its own bindings (and `--bind`); the
/// decode group's totals gain the KV cache handed over (`kv_handoff`):
/// what its ranks receive, per request, and the time at the device's link
/// bandwidth, added to the prefill's time to first token.
FailureOr<std::vector<GroupReport>>
buildGroupReports(const ServingGroups &groups, const ReportRequest &request);

} // namespace mlir::stage::report

#endif // STAGE_LIB_TARGET_REPORT_DISAGGREGATEDREPORT_H
