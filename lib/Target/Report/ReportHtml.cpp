//===- ReportHtml.cpp - A self-contained HTML page with SVG charts --------===//
//
// No script and no network: the charts are SVG drawn here. Every bar and
// step carries its number in `data-*` attributes (and a tooltip), so the
// page can be checked against the JSON report.
//
//===----------------------------------------------------------------------===//

#include "ReportFormat.h"
#include "ReportSections.h"

#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

namespace {

std::string escape(StringRef s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

/// A scale's tick: the value read as the report's numbers are, or in
/// floating point beyond 2^63 units (a memory of exabytes).
std::string tickLabel(double v, llvm::StringRef unit) {
  if (std::optional<sym::Rational> n = roundedCount(v))
    return escape(humanReadable(*n, unit));
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.3g ", v) << unit;
  return escape(s);
}

std::string num(double v) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.2f", v);
  return s;
}

const char *const kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                               "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                               "#9c755f", "#bab0ac"};

constexpr double kWidth = 760, kBarArea = 560, kLeft = 150;

/// Horizontal bars, one row per label, each made of segments.
struct BarRow {
  std::string label;
  int64_t stage;
  struct Segment {
    std::string key, label;
    sym::Rational value;
    std::string unit;
  };
  std::vector<Segment> segments;
};

/// A line across the bars at a value (a device's memory).
struct Limit {
  double value;
  std::string label;
};

void drawBars(llvm::raw_ostream &os, const std::vector<BarRow> &rows,
              const std::vector<std::string> &legend, StringRef unit,
              std::optional<Limit> limit = std::nullopt) {
  double max = limit ? limit->value : 0;
  for (const BarRow &r : rows) {
    double sum = 0;
    for (const auto &s : r.segments)
      sum += s.value.toDouble();
    max = std::max(max, sum);
  }
  if (max <= 0)
    max = 1;
  // The legend wraps: items of about 7 pixels per character.
  struct Item {
    double x, y;
  };
  std::vector<Item> items;
  // Under the bars, a scale: five ticks from 0 to the largest.
  double rowHeight = 26, scaleY = 10 + rows.size() * rowHeight;
  double lx = kLeft, ly = scaleY + 34;
  for (const std::string &name : legend) {
    double w = 14 + 7.0 * name.size() + 16;
    if (lx + w > kWidth && lx > kLeft) {
      lx = kLeft;
      ly += 18;
    }
    items.push_back({lx, ly});
    lx += w;
  }
  double height = ly + 18;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth
     << "\" height=\"" << num(height) << "\" role=\"img\">\n";
  for (auto [i, r] : llvm::enumerate(rows)) {
    double y = 10 + i * rowHeight, x = kLeft;
    os << "<text x=\"" << num(kLeft - 8) << "\" y=\"" << num(y + 15)
       << "\" text-anchor=\"end\">" << escape(r.label) << "</text>\n";
    for (const auto &s : r.segments) {
      double w = s.value.toDouble() / max * kBarArea;
      size_t color = llvm::find(legend, s.label) - legend.begin();
      os << "<rect class=\"bar\" x=\"" << num(x) << "\" y=\"" << num(y)
         << "\" width=\"" << num(w) << "\" height=\"20\" fill=\""
         << kColors[color % std::size(kColors)] << "\" data-stage=\"" << r.stage
         << "\" data-key=\"" << escape(s.key) << "\" data-value=\""
         << exactValue(s.value) << "\"><title>" << escape(s.label) << ": "
         << escape(humanReadable(s.value, s.unit)) << "</title></rect>\n";
      x += w;
    }
  }
  os << "<line class=\"scale\" x1=\"" << num(kLeft) << "\" y1=\"" << num(scaleY)
     << "\" x2=\"" << num(kLeft + kBarArea) << "\" y2=\"" << num(scaleY)
     << "\" stroke=\"#888\"/>\n";
  for (int t = 0; t <= 4; ++t) {
    double x = kLeft + kBarArea * t / 4, v = max * t / 4;
    os << "<line x1=\"" << num(x) << "\" y1=\"" << num(scaleY) << "\" x2=\""
       << num(x) << "\" y2=\"" << num(scaleY + 4) << "\" stroke=\"#888\"/>"
       << "<text class=\"tick\" x=\"" << num(x) << "\" y=\"" << num(scaleY + 16)
       << "\" text-anchor=\""
       << (t == 0   ? "start"
           : t == 4 ? "end"
                    : "middle")
       << "\">" << tickLabel(v, unit) << "</text>\n";
  }
  if (limit) {
    double x = kLeft + limit->value / max * kBarArea;
    os << "<line class=\"limit\" x1=\"" << num(x) << "\" y1=\"4\" x2=\""
       << num(x) << "\" y2=\"" << num(scaleY) << "\" stroke=\"#b00\" "
       << "stroke-dasharray=\"4 3\" data-value=\"" << num(limit->value)
       << "\"><title>" << escape(limit->label) << "</title></line>"
       << "<text class=\"tick\" x=\"" << num(x - 3) << "\" y=\""
       << num(scaleY + 28) << "\" text-anchor=\"end\" fill=\"#b00\">"
       << escape(limit->label) << "</text>\n";
  }
  for (auto [i, name] : llvm::enumerate(legend))
    os << "<rect x=\"" << num(items[i].x) << "\" y=\"" << num(items[i].y)
       << "\" width=\"10\" height=\"10\" fill=\""
       << kColors[i % std::size(kColors)] << "\"/><text x=\""
       << num(items[i].x + 14) << "\" y=\"" << num(items[i].y + 9)
       << "\" class=\"legend\">" << escape(name) << "</text>\n";
  os << "</svg>\n";
}

void memoryChart(const Report &report, llvm::raw_ostream &os) {
  static const char *const parts[][2] = {
      {"weights", "weights"},
      {"gradients", "gradients"},
      {"master_weights", "fp32 master weights"},
      {"optimizer_moments", "optimizer moments"},
      {"kv_cache", "KV cache"},
      {"peak_activations", "kept activations at most"},
      {"prefill_transient", "largest prefill working set"},
      {"decode_transient", "largest decode-step working set"},
      {"backward_transient", "largest backward working set"}};
  // Serving holds a prefill's working set or a decode step's, never both:
  // the bar shows the one at the peak.
  auto atPeak = [](const Section *mem, StringRef key) {
    const Quantity *prefill = mem->find("prefill_transient"),
                   *decode = mem->find("decode_transient");
    if (!prefill || !decode)
      return true;
    bool decodeLarger = prefill->value < decode->value;
    return key == (decodeLarger ? "decode_transient" : "prefill_transient");
  };
  std::vector<BarRow> rows;
  std::vector<std::string> legend;
  for (auto &p : parts)
    legend.push_back(p[1]);
  for (const StageReport &s : report.stages) {
    BarRow r{"stage " + std::to_string(s.stage), s.stage, {}};
    const Section *mem = s.find("memory");
    for (auto &p : parts) {
      const Quantity *q = mem->find(p[0]);
      bool transient = StringRef(p[0]).ends_with("_transient");
      if (q && (!transient || atPeak(mem, p[0])))
        r.segments.push_back({"memory." + std::string(p[0]), p[1], q->value, "B"});
    }
    rows.push_back(std::move(r));
  }
  std::optional<Limit> limit;
  if (report.roofline)
    limit = Limit{
        report.roofline->memoryCapacity,
        report.roofline->name + " memory " +
            humanReadable(
                sym::Rational(int64_t(report.roofline->memoryCapacity)), "B")};
  drawBars(os, rows, legend, "B", limit);
}

void commChart(const Report &report, llvm::raw_ostream &os) {
  std::vector<BarRow> rows;
  std::vector<std::string> legend;
  for (const auto &[key, label] : stageRowKeys(report, "communication"))
    legend.push_back(label);
  for (const StageReport &s : report.stages) {
    BarRow r{"stage " + std::to_string(s.stage), s.stage, {}};
    for (const Quantity &q : s.find("communication")->rows)
      r.segments.push_back({"communication." + q.key, q.label, q.value, "B"});
    // In the legend's order on every row, whatever each stage's own order.
    llvm::stable_sort(r.segments, [&](const auto &a, const auto &b) {
      return llvm::find(legend, a.label) < llvm::find(legend, b.label);
    });
    rows.push_back(std::move(r));
  }
  drawBars(os, rows, legend, "B");
}

/// How to see the traces themselves in time: the first rank of each stage
/// (pp coordinate p, every other 0) replayed by `stage-trace timeline`.
void replayHint(const JobReport &job, llvm::raw_ostream &os) {
  os << "<p>Node by node, from the traces (one rank per stage): "
        "<code>stage-trace timeline TRACE_DIR --ranks=";
  for (auto [p, rank] : llvm::enumerate(job.getStageFirstRanks()))
    os << (p ? "," : "") << rank;
  os << " -o timeline.json</code>, opened in ui.perfetto.dev or "
        "chrome://tracing.</p>\n";
}

void timelineChart(const PipelineReport &p, llvm::raw_ostream &os) {
  double scheduleEnd = 0;
  for (const auto &stage : p.timeline)
    for (const TimelineStep &t : stage)
      scheduleEnd = std::max(scheduleEnd, t.end);
  // The iteration goes on with the reductions and the optimizer step.
  double end = scheduleEnd + p.afterSchedule;
  if (end <= 0)
    end = 1;
  double rowHeight = 26, height = p.timeline.size() * rowHeight + 30;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth
     << "\" height=\"" << num(height) << "\" role=\"img\">\n";
  for (auto [i, stage] : llvm::enumerate(p.timeline)) {
    double y = 10 + i * rowHeight;
    os << "<text x=\"" << num(kLeft - 8) << "\" y=\"" << num(y + 15)
       << "\" text-anchor=\"end\">stage " << i << "</text>\n";
    for (const TimelineStep &t : stage) {
      double x = kLeft + t.start / end * kBarArea;
      double w = std::max(0.5, (t.end - t.start) / end * kBarArea);
      bool forward = t.kind == StepKind::Forward;
      bool weights = t.kind == StepKind::WeightGrad;
      std::string name = std::string(forward   ? "F"
                                     : weights ? "W"
                                               : "B") +
                         std::to_string(t.microbatch);
      if (p.virtualStages > 1)
        name += "." + std::to_string(t.chunk);
      os << "<g class=\"step\" data-stage=\"" << i << "\" data-forward=\""
         << (forward ? 1 : 0) << "\" data-microbatch=\"" << t.microbatch
         << "\" data-chunk=\"" << t.chunk << "\" data-start=\""
         << llvm::format("%.9g", t.start) << "\" data-end=\""
         << llvm::format("%.9g", t.end) << "\"><rect x=\"" << num(x)
         << "\" y=\"" << num(y) << "\" width=\"" << num(w)
         << "\" height=\"20\" fill=\""
         << (forward   ? "#4e79a7"
             : weights ? "#59a14f"
                       : "#f28e2b")
         << "\"/><title>" << name << "</title>";
      if (w > 16)
        os << "<text x=\"" << num(x + w / 2) << "\" y=\"" << num(y + 14)
           << "\" text-anchor=\"middle\" class=\"step-label\">" << name
           << "</text>";
      os << "</g>\n";
    }
    if (p.afterSchedule > 0) {
      double x = kLeft + scheduleEnd / end * kBarArea;
      double w = std::max(0.5, p.afterSchedule / end * kBarArea);
      os << "<g class=\"optimizer\" data-stage=\"" << i << "\" data-start=\""
         << llvm::format("%.9g", scheduleEnd) << "\" data-end=\""
         << llvm::format("%.9g", end) << "\"><rect x=\"" << num(x) << "\" y=\""
         << num(y) << "\" width=\"" << num(w)
         << "\" height=\"20\" fill=\"#bab0ac\"/><title>reductions and "
            "optimizer step</title>";
      if (w > 24)
        os << "<text x=\"" << num(x + w / 2) << "\" y=\"" << num(y + 14)
           << "\" text-anchor=\"middle\" class=\"step-label\">opt</text>";
      os << "</g>\n";
    }
  }
  os << "<text x=\"" << num(kLeft) << "\" y=\"" << num(height - 4)
     << "\" class=\"legend\">0</text><text x=\"" << num(kLeft + kBarArea)
     << "\" y=\"" << num(height - 4)
     << "\" text-anchor=\"end\" class=\"legend\">"
     << escape(humanReadable(exactSeconds(end).value_or(sym::Rational(0)), "s"))
     << "</text>\n</svg>\n";
}

/// The replay's iteration beside the report's, and why they may differ: one
/// iteration time when they agree within 1%.
void replayAgreement(const Report &report, llvm::raw_ostream &os) {
  const Section *times = report.findTotal("job_time");
  const Quantity *iteration = times ? times->find("iteration") : nullptr;
  if (!iteration || report.replay->iteration <= 0)
    return;
  double closed = iteration->value.toDouble();
  double replayed = report.replay->iteration;
  double gap = replayed / closed - 1;
  if (std::abs(gap) <= 0.01) {
    os << "<p>The replay ends with the report's iteration ("
       << escape(humanReadable(exactSeconds(closed).value_or(sym::Rational(0)),
                               "s"))
       << ").</p>\n";
    return;
  }
  os << "<p>The replay ends at "
     << escape(humanReadable(exactSeconds(replayed).value_or(sym::Rational(0)),
                             "s"))
     << ", the report's iteration is "
     << escape(humanReadable(exactSeconds(closed).value_or(sym::Rational(0)),
                             "s"))
     << " (" << llvm::format("%+.1f", 100 * gap)
     << "%): the replay runs every node as soon as the traces' dependencies "
        "let it, so a collective overlaps whatever compute does not wait for "
        "it (a tensor-parallel input gradient's reduction with the weight "
        "gradient), where the report counts tensor-parallel and expert "
        "collectives whole on the critical path; and a node's duration is "
        "rounded up to the microsecond (Chakra's unit).";
  if (!report.replay->durations)
    os << " These traces carry no durations: the replay prices a node from "
          "its FLOPs and bytes, every FLOP at the matrix units' rate, where "
          "the report runs elementwise work at the vector rate (write the "
          "traces with <code>--device</code> to replay the report's "
          "durations).";
  os << "</p>\n";
}

/// The traces replayed (--traces): per rank, its compute nodes on one bar
/// and its communication in flight on a thinner one below.
void replayChart(const TraceReplay &r, llvm::raw_ostream &os) {
  double end = r.iteration > 0 ? r.iteration : 1;
  double rowHeight = 34, height = r.ranks.size() * rowHeight + 30;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth
     << "\" height=\"" << num(height) << "\" role=\"img\">\n";
  for (auto [i, entry] : llvm::enumerate(r.ranks)) {
    const auto &[rank, steps] = entry;
    double y = 10 + i * rowHeight;
    os << "<text x=\"" << num(kLeft - 8) << "\" y=\"" << num(y + 13)
       << "\" text-anchor=\"end\">rank " << rank << "</text>\n";
    for (const TraceReplay::Step &s : steps) {
      bool compute = s.lane == 0;
      double x = kLeft + s.start / end * kBarArea;
      double w = std::max(0.3, (s.end - s.start) / end * kBarArea);
      os << "<rect class=\"replay\" data-rank=\"" << rank << "\" x=\"" << num(x)
         << "\" y=\"" << num(compute ? y : y + 20) << "\" width=\"" << num(w)
         << "\" height=\"" << (compute ? "16" : "6") << "\" fill=\""
         << (compute ? "#4e79a7" : "#f28e2b") << "\" fill-opacity=\""
         << (compute ? "1" : "0.5") << "\"><title>" << escape(s.name)
         << "</title></rect>\n";
    }
  }
  os << "<text x=\"" << num(kLeft) << "\" y=\"" << num(height - 4)
     << "\" class=\"legend\">0</text><text x=\"" << num(kLeft + kBarArea)
     << "\" y=\"" << num(height - 4)
     << "\" text-anchor=\"end\" class=\"legend\">"
     << escape(humanReadable(exactSeconds(end).value_or(sym::Rational(0)), "s"))
     << "</text>\n</svg>\n";
}

void table(llvm::raw_ostream &os, const Section &s) {
  os << "<div class=\"wide\"><table><caption>" << escape(s.title)
     << "</caption>\n"
     << "<tr><th>quantity</th><th>symbolic</th><th>value</th></tr>\n";
  for (const Quantity &q : s.rows)
    os << "<tr><td>" << escape(q.label) << "</td><td><code>"
       << escape(q.expr ? q.expr->str() : "") << "</code></td><td class=\"n\">"
       << escape(humanReadable(q.value, q.unit)) << "</td></tr>\n";
  os << "</table></div>\n";
}

/// The KV cache in use over a request stream's time: a line from 0 to 1.
void occupancyChart(const RequestsReport &r, llvm::raw_ostream &os) {
  if (r.occupancy.empty())
    return;
  double t0 = r.occupancy.front().first, t1 = r.occupancy.back().first;
  double span = t1 > t0 ? t1 - t0 : 1, height = 160, top = 10, plot = 120;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth
     << "\" height=\"" << num(height) << "\" role=\"img\" "
     << "class=\"kv-occupancy\">\n";
  os << "<text x=\"" << num(kLeft - 8) << "\" y=\"" << num(top + 10)
     << "\" text-anchor=\"end\">100%</text>\n<text x=\"" << num(kLeft - 8)
     << "\" y=\"" << num(top + plot) << "\" text-anchor=\"end\">0</text>\n";
  os << "<rect x=\"" << num(kLeft) << "\" y=\"" << num(top) << "\" width=\""
     << num(kBarArea) << "\" height=\"" << num(plot)
     << "\" fill=\"none\" stroke=\"#ccc\"/>\n<polyline fill=\"none\" "
        "stroke=\"#4e79a7\" points=\"";
  for (auto [t, used] : r.occupancy)
    os << num(kLeft + (t - t0) / span * kBarArea) << ","
       << num(top + plot * (1 - used)) << " ";
  os << "\"/>\n";
  for (auto [t, used] : r.occupancy)
    os << "<g class=\"point\" data-time=\"" << llvm::format("%.9g", t)
       << "\" data-occupancy=\"" << llvm::format("%.6g", used) << "\"/>\n";
  os << "<text x=\"" << num(kLeft) << "\" y=\"" << num(height - 4)
     << "\" class=\"legend\">"
     << escape(humanReadable(exactSeconds(t0).value_or(sym::Rational(0)), "s"))
     << "</text><text x=\"" << num(kLeft + kBarArea) << "\" y=\""
     << num(height - 4) << "\" text-anchor=\"end\" class=\"legend\">"
     << escape(humanReadable(exactSeconds(t1).value_or(sym::Rational(0)), "s"))
     << "</text>\n</svg>\n";
}

void stageTable(llvm::raw_ostream &os, const Report &report,
                const Section &proto) {
  // Wide (a column per stage): scrolls within the page.
  os << "<div class=\"wide\"><table><caption>" << escape(proto.title)
     << "</caption>\n<tr><th>quantity</th>";
  for (const StageReport &s : report.stages)
    os << "<th>stage " << s.stage
       << (s.layers.empty() ? "" : "<br>layers " + escape(s.layers)) << "</th>";
  os << "</tr>\n";
  for (const auto &[key, label] : stageRowKeys(report, proto.key)) {
    os << "<tr><td>" << escape(label) << "</td>";
    for (const StageReport &s : report.stages) {
      const Section *sec = s.find(proto.key);
      const Quantity *q = sec ? sec->find(key) : nullptr;
      os << "<td class=\"n\">"
         << (q ? escape(humanReadable(q->value, q->unit)) : "-") << "</td>";
    }
    os << "</tr>\n";
  }
  os << "</table></div>\n";
}

} // namespace

static void printHtmlHead(llvm::raw_ostream &os) {
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
        "charset=\"utf-8\">\n"
     << "<title>stage report</title>\n<style>\n"
     << "body{font-family:sans-serif;margin:2em;max-width:60em;color:#222}\n"
     << "table{border-collapse:collapse;margin:1em 0}\n"
     << "td,th{border:1px solid #ccc;padding:.2em .6em}\n"
     << "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
     << "caption{font-weight:bold;text-align:left;padding:.3em 0}\n"
     << "svg text{font-size:12px}\n.legend{font-size:11px}\n"
     << ".step-label{fill:#fff;font-size:10px}\n.warning{color:#b00}\n"
     << ".wide{overflow-x:auto;max-width:100%}\n.tick{font-size:10px}\n"
     << "</style>\n</head>\n<body>\n";
}

/// One report's warnings, tables and charts.
static void printHtmlBody(const Report &report, llvm::raw_ostream &os) {
  for (const std::string &w : report.warnings)
    os << "<p class=\"warning\"><strong>Warning:</strong> " << escape(w) << "</p>\n";
  os << "<p>Bindings: ";
  bool first = true;
  for (const auto &[k, v] : report.bindings) {
    os << (first ? "" : ", ") << escape(k) << "=" << v;
    first = false;
  }
  os << "</p>\n";
  if (report.job) {
    os << "<h2>" << (report.job->serving ? "Serving" : "A training step")
       << " on " << report.job->gpus << " GPUs</h2>\n<p>"
       << escape(describeJob(*report.job)) << "</p>\n";
    for (const Section &s : report.totals)
      table(os, s);
  }
  if (const std::optional<RequestsReport> &rq = report.requests) {
    os << "<h2>Request stream: " << escape(rq->workload) << "</h2>\n";
    for (const Section &s : rq->sections)
      table(os, s);
    os << "<h2>KV cache in use over time (the fullest replica)</h2>\n";
    occupancyChart(*rq, os);
  }
  if (!report.stages.empty()) {
    if (const std::optional<PipelineReport> &p = report.pipeline)
      os << "<p>Schedule " << escape(p->schedule) << ", pp=" << p->stages << ", "
         << p->virtualStages << " chunk(s) per rank, " << p->microBatches
         << " micro-batch(es); bubble " << llvm::format("%.1f", 100 * p->bubble)
         << "% of compute time.</p>\n";
    os << "<h2>Memory per rank, by pipeline stage</h2>\n";
    memoryChart(report, os);
    os << "<h2>Communication per rank and iteration</h2>\n";
    commChart(report, os);
    if (report.pipeline) {
      os << "<h2>One iteration, per stage</h2>\n";
      timelineChart(*report.pipeline, os);
      if (!report.replay)
        replayHint(*report.job, os);
    }
    if (report.replay) {
      os << "<h2>The traces, node by node</h2>\n<p>"
         << escape(report.replay->dir)
         << " replayed (<code>stage-trace timeline</code>: compute above, "
            "communication in flight below), the first rank of each "
            "stage.</p>\n";
      replayChart(*report.replay, os);
      replayAgreement(report, os);
    }
    for (const Section &proto : report.stages.front().sections)
      stageTable(os, report, proto);
  }
  for (const FunctionReport &f : report.functions) {
    os << "<h2>@" << escape(f.name) << " (" << escape(f.scope) << ")</h2>\n";
    for (const Section &s : f.sections)
      table(os, s);
  }
}


void mlir::stage::report::printHtml(const Report &report, llvm::raw_ostream &os) {
  printHtmlHead(os);
  os << "<h1>stage report</h1>\n";
  printHtmlBody(report, os);
  os << "</body>\n</html>\n";
}

void mlir::stage::report::printHtml(
    ArrayRef<std::pair<std::string, const Report *>> parts,
    llvm::raw_ostream &os) {
  printHtmlHead(os);
  for (const auto &[title, report] : parts) {
    os << "<h1>" << escape(title) << "</h1>\n";
    printHtmlBody(*report, os);
  }
  os << "</body>\n</html>\n";
}
