//===- DisaggregatedReport.cpp - Reports of a run's rank groups -----------===//

#include "DisaggregatedReport.h"

#include "ReportSections.h"

#include "Stage/Support/TimeModel.h"

#include "Stage/Target/TargetOptions.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

/// What the decode ranks receive: each its cache over the prompt
/// positions (kv_cache_start), every rank of every stage.
static FailureOr<Section> handoffSection(Operation *at, const Report &prefill,
                                         const Report &decode) {
  sym::Rational total(0), perRank(0);
  for (const StageReport &s : decode.stages) {
    sym::Rational start = s.find("memory")->find("kv_cache_start")->value;
    total = total + start * sym::Rational(decode.job->ranksPerStage);
    if (perRank < start)
      perRank = start;
  }
  SectionBuilder h(at, decode.bindings, "kv_handoff",
                   "KV cache handed from the prefill group");
  h.addValue("bytes", "bytes moved, all decode ranks", "B", total);
  int64_t requests = decode.bindings.count("B") ? decode.bindings.at("B") : 1;
  h.addValue("bytes_per_request", "bytes moved per request", "B",
             total / sym::Rational(requests));
  h.addValue("bytes_per_rank", "bytes a decode rank receives (most)", "B",
             perRank);
  if (decode.device && prefill.job && decode.job) {
    // The groups' ranks follow one another: in one node if both fit, else
    // the messages cross the network.
    const DeviceModel &d = *decode.device;
    bool oneNode = prefill.job->gpus + decode.job->gpus <= d.gpusPerNode;
    double transfer = ::stage::collectiveSeconds(
        ::stage::CollectiveKind::Send, perRank.toDouble(),
        {2, oneNode ? 2.0 : 1.0}, 1, d);
    h.addSeconds("seconds",
                 std::string(oneNode ? "over the links" : "across the network") +
                     " of " + d.displayName(),
                 transfer);
    const Section *times = prefill.findTotal("job_time");
    if (const Quantity *ttft = times ? times->find("ttft") : nullptr) {
      double prefillSeconds = ttft->value.toDouble();
      h.addSeconds("ttft", "time to first token with the handoff",
                   prefillSeconds + transfer);
      // Sent layer by layer as the prefill goes (Mooncake, DistServe), only
      // the last layer's part, or what the prefill's other layers do not
      // cover, is exposed.
      double layers = prefill.bindings.count("L")
                          ? double(std::max<int64_t>(1, prefill.bindings.at("L")))
                          : 1;
      double layerwise =
          std::max(transfer / layers,
                   transfer - prefillSeconds * (layers - 1) / layers);
      h.addSeconds("ttft_layerwise",
                   "time to first token, the handoff sent layer by layer "
                   "during the prefill",
                   prefillSeconds + layerwise);
      const Section *decodeTimes = decode.findTotal("job_time");
      const Quantity *tpot = decodeTimes ? decodeTimes->find("tpot") : nullptr;
      int64_t steps = decode.bindings.count("N") ? decode.bindings.at("N") : 0;
      if (tpot && steps > 0)
        h.addSeconds("end_to_end",
                     "end to end: prefill, handoff, then every decode step "
                     "(as the traces run them)",
                     prefillSeconds + transfer +
                         double(steps) * tpot->value.toDouble());
    }
  }
  return h.take();
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
  FailureOr<Section> handoff =
      handoffSection(groups.decode, out[0].report, out[1].report);
  if (failed(handoff))
    return failure();
  out[1].report.totals.push_back(std::move(*handoff));
  return out;
}
