//===- DisaggregatedReport.cpp - Reports of a run's rank groups -----------===//

#include "DisaggregatedReport.h"

#include "Stage/Target/TargetOptions.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

/// Nanoseconds as an exact fraction, as the other sections give times.
static sym::Rational seconds(double s) {
  return sym::Rational(sym::BigInt(int64_t(std::llround(s * 1e9))),
                       sym::BigInt(1000000000));
}

/// What the decode ranks receive: each its cache over the prompt
/// positions (kv_cache_start), every rank of every stage.
static Section handoffSection(const Report &prefill, const Report &decode) {
  sym::Rational total(0), perRank(0);
  for (const StageReport &s : decode.stages) {
    sym::Rational start = s.find("memory")->find("kv_cache_start")->value;
    total = total + start * sym::Rational(decode.job->ranksPerStage);
    if (perRank < start)
      perRank = start;
  }
  Section h{"kv_handoff", "KV cache handed from the prefill group", {}};
  h.rows.push_back(
      {"bytes", "bytes moved, all decode ranks", "B", std::nullopt, total});
  int64_t requests = decode.bindings.count("B") ? decode.bindings.at("B") : 1;
  h.rows.push_back({"bytes_per_request", "bytes moved per request", "B",
                    std::nullopt, total / sym::Rational(requests)});
  h.rows.push_back({"bytes_per_rank", "bytes a decode rank receives (most)",
                    "B", std::nullopt, perRank});
  if (decode.device && decode.device->linkBytes > 0) {
    double transfer = perRank.toDouble() / decode.device->linkBytes;
    h.rows.push_back({"seconds",
                      "at the link bandwidth of " + decode.device->name, "s",
                      std::nullopt, seconds(transfer)});
    const Section *times = prefill.findTotal("job_time");
    if (const Quantity *ttft = times ? times->find("ttft") : nullptr)
      h.rows.push_back({"ttft", "time to first token with the handoff", "s",
                        std::nullopt,
                        seconds(ttft->value.toDouble() + transfer)});
  }
  return h;
}

FailureOr<std::vector<GroupReport>>
mlir::stage::report::buildGroupReports(const ServingGroups &groups,
                                       const ReportRequest &request) {
  std::vector<GroupReport> out;
  int64_t first = 0;
  for (auto [name, module] : groups.named()) {
    FailureOr<sym::Bindings> b = getEffectiveBindings(module);
    if (failed(b))
      return failure();
    FailureOr<Report> r = buildReport(module, *b, request);
    if (failed(r))
      return failure();
    if (!r->job || !r->job->serving)
      return module.emitError("a disaggregated run's groups are serving "
                              "programs (stage-infer)");
    out.push_back({name.str(), first, std::move(*r)});
    first += out.back().report.job->gpus;
  }
  out[1].report.totals.push_back(handoffSection(out[0].report, out[1].report));
  return out;
}
