//===- SearchFormat.cpp - Renderings of a plan search ---------------------===//

#include "Stage/Explore/SearchFormat.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>

using namespace mlir::stage;
using namespace mlir::stage::explore;

namespace {

std::string fixed(double v, int digits) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(("%." + std::to_string(digits) + "f").c_str(), v);
  return s;
}

/// Bytes in the largest binary unit that keeps the number at least 1.
std::string gib(double bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024) {
    bytes /= 1024;
    ++u;
  }
  return fixed(bytes, u ? 1 : 0) + " " + units[u];
}

std::string seconds(double s) {
  if (s >= 1)
    return fixed(s, 3) + " s";
  if (s >= 1e-3)
    return fixed(s * 1e3, 1) + " ms";
  return fixed(s * 1e6, 1) + " us";
}

/// The time a plan is drawn at: the iteration, or a serving plan's time
/// per output token.
double chartSeconds(const Candidate &c) {
  return c.estimate.serving ? c.estimate.tpotSeconds
                            : c.estimate.iterationSeconds;
}

size_t shown(const SearchResult &r, const SearchTitle &t) {
  return std::min<size_t>(r.ranked.size(), size_t(std::max<int64_t>(t.top, 0)));
}

std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

} // namespace

std::string mlir::stage::explore::describeSearch(const SearchResult &r,
                                                 const SearchTitle &t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t.model << " on " << t.gpus << " GPUs (" << t.device.displayName() << ", "
     << gib(t.device.memoryCapacity) << "), ";
  if (t.serving)
    os << "serving: up to " << t.batch << " requests of " << t.seq
       << " prompt tokens, " << t.decodeTokens << " decoded each.\n";
  else
    os << "batch " << t.batch << " x sequence " << t.seq << ".\n";
  int64_t excluded = 0;
  for (const auto &[why, n] : r.excluded)
    excluded += n;
  int64_t compiled = r.shapes - r.shapesSkipped;
  os << r.enumerated << " plans; " << compiled << " shapes compiled, "
     << r.evaluated << " evaluated, " << r.ranked.size() << " fit the device";
  if (int64_t over = r.statesOver + r.activationsOver)
    os << ", " << over << " do not (" << r.statesOver
       << " by their model states alone, " << r.activationsOver
       << " with their activations; the smallest such peak is "
       << gib(double(r.smallestPeakOver)) << ")";
  os << ".\n";
  if (r.overLatency)
    os << r.overLatency << " more fit but exceed the time per output token of "
       << seconds(t.maxTpotSeconds) << " (the shortest such is "
       << seconds(r.smallestTpotOver) << ").\n";
  if (r.statesBoundOver)
    os << r.statesBoundOver
       << " more do not fit by a lower bound of their model states (at least "
       << gib(double(r.smallestBoundOver)) << "), not compiled.\n";
  if (r.peakBoundOver)
    os << r.peakBoundOver
       << " more do not fit by a lower bound of their pipeline stages' "
          "layers and activations (at least "
       << gib(double(r.smallestPeakBoundOver)) << "), not compiled.\n";
  if (r.boundSkipped)
    os << r.boundSkipped << " more not evaluated (" << r.shapesSkipped
       << " shapes not compiled): a lower bound of their iteration exceeds "
          "the longest of the best "
       << t.top << " (--exhaustive evaluates them).\n";
  if (excluded) {
    os << excluded << " left out:";
    for (const auto &[why, n] : r.excluded)
      os << " " << why << " (" << n << ");";
    os << "\n";
  }
  double rate =
      r.evaluateSeconds > 0 ? double(r.evaluated) / r.evaluateSeconds : 0;
  if (r.boundSeconds > 0)
    os << "Bounded the iterations (" << r.boundShapes
       << " steps without a pipeline compiled) in " << fixed(r.boundSeconds, 2)
       << " s. ";
  os << "Compiled " << compiled << " shapes in " << fixed(r.compileSeconds, 2)
     << " s, evaluated " << r.evaluated << " plans in "
     << fixed(r.evaluateSeconds, 2) << " s (" << int64_t(std::llround(rate))
     << " plans/s";
  // Each shape's first plan also derives what its later plans reuse.
  int64_t later = r.evaluated - compiled;
  double laterSeconds = r.evaluateSeconds - r.firstPlanSeconds;
  if (later > 0 && laterSeconds > 0)
    os << "; " << int64_t(std::llround(double(later) / laterSeconds))
       << " plans/s after each shape's first";
  // The phases in CPU time (a core's work, whatever else runs).
  os << "): CPU seconds per core. " << fixed(t.wallSeconds, 2)
     << " s in all.\n";
  return s;
}

std::vector<size_t>
mlir::stage::explore::getParetoFront(const SearchResult &r) {
  // By time, then memory: a plan is on the front when it is smaller than
  // every faster one.
  std::vector<size_t> order(r.ranked.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Candidate &x = r.ranked[a], &y = r.ranked[b];
    if (chartSeconds(x) != chartSeconds(y))
      return chartSeconds(x) < chartSeconds(y);
    return x.estimate.peakBytes < y.estimate.peakBytes;
  });
  std::vector<size_t> front;
  int64_t smallest = INT64_MAX;
  for (size_t i : order)
    if (r.ranked[i].estimate.peakBytes < smallest) {
      smallest = r.ranked[i].estimate.peakBytes;
      front.push_back(i);
    }
  return front;
}

void mlir::stage::explore::printSearchMarkdown(const SearchResult &r,
                                               const SearchTitle &t,
                                               llvm::raw_ostream &os) {
  os << "# Plan search\n\n" << describeSearch(r, t) << "\n";
  if (r.ranked.empty())
    return;
  if (t.serving) {
    os << "| # | plan (--stage-infer) | requests | peak memory | TTFT | TPOT "
          "| decode tokens/s per GPU |\n|---:|---|---:|---:|---:|---:|---:|\n";
    for (size_t i = 0, e = shown(r, t); i < e; ++i) {
      const Candidate &c = r.ranked[i];
      os << "| " << i + 1 << " | `" << c.plan.options() << "` | "
         << c.plan.batch << " | " << gib(double(c.estimate.peakBytes)) << " | "
         << seconds(c.estimate.ttftSeconds) << " | "
         << seconds(c.estimate.tpotSeconds) << " | "
         << int64_t(std::llround(c.tokensPerSecondPerGpu)) << " |\n";
    }
    return;
  }
  os << "| # | plan (--stage-train) | peak memory | iteration | MFU | "
        "tokens/s per GPU |\n|---:|---|---:|---:|---:|---:|\n";
  for (size_t i = 0, e = shown(r, t); i < e; ++i) {
    const Candidate &c = r.ranked[i];
    os << "| " << i + 1 << " | `" << c.plan.options() << "` | "
       << gib(double(c.estimate.peakBytes)) << " | "
       << seconds(c.estimate.iterationSeconds) << " | " << fixed(100 * c.mfu, 1)
       << "% | " << int64_t(std::llround(c.tokensPerSecondPerGpu)) << " |\n";
  }
}

static llvm::json::Object toJson(const Candidate &c, const SearchTitle &t) {
  const Plan &p = c.plan;
  llvm::json::Object o{
      {"plan", p.options()},
      {"gpus", t.gpus},
      {"peak_memory_bytes", c.estimate.peakBytes},
      {"peak_memory_bound_bytes", c.peakBound},
      {"peak_stage", c.estimate.peakStage},
      {"model_states_bytes", c.estimate.modelStatesBytes},
      {"iteration_seconds", c.estimate.iterationSeconds},
      {"iteration_bound_seconds", c.iterationBound},
      {"mfu", c.mfu},
      {"tokens_per_second_per_gpu", c.tokensPerSecondPerGpu},
      {"dp", p.dp},
      {"tp", p.tp},
      {"pp", p.pp},
      {"cp", p.cp},
      {"ep", p.ep},
      {"micro_batches", p.microBatches},
      {"schedule", p.schedule},
      {"virtual_stages", p.virtualStages},
      {"zero", p.zero},
      {"recompute", p.recompute},
      {"sp", p.sp},
  };
  if (!p.serving)
    return o;
  for (const char *training :
       {"mfu", "iteration_bound_seconds", "peak_memory_bound_bytes", "schedule",
        "virtual_stages", "zero", "recompute"})
    o.erase(training);
  o["batch"] = p.batch;
  o["decode_tokens"] = p.decodeTokens;
  o["ttft_seconds"] = c.estimate.ttftSeconds;
  o["tpot_seconds"] = c.estimate.tpotSeconds;
  return o;
}

void mlir::stage::explore::printSearchJson(const SearchResult &r,
                                           const SearchTitle &t,
                                           llvm::raw_ostream &os) {
  llvm::json::Array all;
  for (size_t i = 0, e = shown(r, t); i < e; ++i)
    all.push_back(toJson(r.ranked[i], t));
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(all))) << "\n";
}

void mlir::stage::explore::printSearchCsv(const SearchResult &r,
                                          const SearchTitle &t,
                                          llvm::raw_ostream &os) {
  if (t.serving) {
    os << "rank,plan,gpus,batch,peak_memory_bytes,ttft_seconds,tpot_seconds,"
          "tokens_per_second_per_gpu\n";
    for (size_t i = 0, e = shown(r, t); i < e; ++i) {
      const Candidate &c = r.ranked[i];
      os << i + 1 << ",\"" << c.plan.options() << "\"," << t.gpus << ","
         << c.plan.batch << "," << c.estimate.peakBytes << ","
         << llvm::format("%.9g", c.estimate.ttftSeconds) << ","
         << llvm::format("%.9g", c.estimate.tpotSeconds) << ","
         << int64_t(std::llround(c.tokensPerSecondPerGpu)) << "\n";
    }
    return;
  }
  os << "rank,plan,gpus,peak_memory_bytes,iteration_seconds,mfu,"
        "tokens_per_second_per_gpu\n";
  for (size_t i = 0, e = shown(r, t); i < e; ++i) {
    const Candidate &c = r.ranked[i];
    os << i + 1 << ",\"" << c.plan.options() << "\"," << t.gpus << ","
       << c.estimate.peakBytes << ","
       << llvm::format("%.9g", c.estimate.iterationSeconds) << ","
       << llvm::format("%.4f", c.mfu) << ","
       << int64_t(std::llround(c.tokensPerSecondPerGpu)) << "\n";
  }
}

/// An SVG chart's opening tag and its two axes: the plot area lies
/// `left`, `right`, `top` and `bottom` inside `width` x `height`.
static void openChart(double width, double height, double left, double right,
                      double top, double bottom, llvm::raw_ostream &os) {
  double axis = height - bottom;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height << "\">\n";
  os << "<line x1=\"" << left << "\" y1=\"" << axis << "\" x2=\""
     << width - right << "\" y2=\"" << axis << "\" stroke=\"#444\"/>\n"
     << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left
     << "\" y2=\"" << axis << "\" stroke=\"#444\"/>\n";
}

/// Time against memory, every fitting plan a dot (its plan on hover), the
/// Pareto front joined and labelled, the device memory as a line.
static void paretoChart(const SearchResult &r, const SearchTitle &t,
                        llvm::raw_ostream &os) {
  const double width = 900, height = 520, left = 70, right = 20, top = 20,
               bottom = 50;
  double tMax = 0, mMax = t.device.memoryCapacity;
  for (const Candidate &c : r.ranked) {
    tMax = std::max(tMax, chartSeconds(c));
    mMax = std::max(mMax, double(c.estimate.peakBytes));
  }
  if (tMax <= 0)
    return;
  auto x = [&](double s) { return left + (width - left - right) * s / tMax; };
  auto y = [&](double b) {
    return height - bottom - (height - top - bottom) * b / mMax;
  };
  openChart(width, height, left, right, top, bottom, os);
  // Five ticks on each axis.
  for (int i = 0; i <= 5; ++i) {
    double s = tMax * i / 5, b = mMax * i / 5;
    os << "<text class=\"tick\" x=\"" << x(s) << "\" y=\"" << y(0) + 14
       << "\" text-anchor=\"middle\">" << escape(seconds(s)) << "</text>\n"
       << "<text class=\"tick\" x=\"" << left - 4 << "\" y=\"" << y(b) + 3
       << "\" text-anchor=\"end\">" << escape(gib(b)) << "</text>\n";
  }
  os << "<text x=\"" << (left + width) / 2 << "\" y=\"" << height - 8
     << "\" text-anchor=\"middle\">"
     << (t.serving ? "time per output token" : "iteration time") << "</text>\n"
     << "<text x=\"14\" y=\"" << (top + height) / 2
     << "\" transform=\"rotate(-90 14 " << (top + height) / 2
     << ")\" text-anchor=\"middle\">peak memory per GPU</text>\n";
  os << "<line x1=\"" << left << "\" y1=\"" << y(t.device.memoryCapacity)
     << "\" x2=\"" << width - right << "\" y2=\"" << y(t.device.memoryCapacity)
     << "\" stroke=\"#b00\" stroke-dasharray=\"4 3\"/>\n<text class=\"tick\" "
        "x=\""
     << width - right << "\" y=\"" << y(t.device.memoryCapacity) - 4
     << "\" text-anchor=\"end\" fill=\"#b00\">" << escape(t.device.displayName())
     << " memory</text>\n";
  for (const Candidate &c : r.ranked)
    os << "<circle cx=\"" << fixed(x(chartSeconds(c)), 1) << "\" cy=\""
       << fixed(y(double(c.estimate.peakBytes)), 1)
       << "\" r=\"2\" fill=\"#8ab\"><title>" << escape(c.plan.options())
       << "</title></circle>\n";
  std::vector<size_t> front = getParetoFront(r);
  os << "<polyline fill=\"none\" stroke=\"#d60\" points=\"";
  for (size_t i : front)
    os << fixed(x(chartSeconds(r.ranked[i])), 1) << ","
       << fixed(y(double(r.ranked[i].estimate.peakBytes)), 1) << " ";
  os << "\"/>\n";
  for (size_t i : front) {
    const Candidate &c = r.ranked[i];
    double cx = x(chartSeconds(c)), cy = y(double(c.estimate.peakBytes));
    os << "<circle class=\"pareto\" cx=\"" << fixed(cx, 1) << "\" cy=\""
       << fixed(cy, 1) << "\" r=\"4\" fill=\"#d60\"><title>"
       << escape(c.plan.options())
       << "</title></circle>\n<text class=\"tick\" x=\"" << fixed(cx + 6, 1)
       << "\" y=\"" << fixed(cy - 4, 1) << "\">" << escape(c.plan.options())
       << "</text>\n";
  }
  os << "</svg>\n";
}

void mlir::stage::explore::printSearchHtml(const SearchResult &r,
                                           const SearchTitle &t,
                                           llvm::raw_ostream &os) {
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
        "charset=\"utf-8\">\n"
     << "<title>stage plan search</title>\n<style>\n"
     << "body{font-family:sans-serif;margin:2em;color:#222}\n"
     << "table{border-collapse:collapse;margin:1em 0}\n"
     << "td,th{border:1px solid #ccc;padding:.2em .6em}\n"
     << "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
     << ".tick{font-size:10px}\nsvg text{font-size:12px}\n"
     << "</style>\n</head>\n<body>\n<h1>Plan search</h1>\n";
  std::string summary = describeSearch(r, t);
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(summary).trim().split(lines, '\n');
  for (llvm::StringRef line : lines)
    os << "<p>" << escape(line.str()) << "</p>\n";
  if (r.ranked.empty()) {
    os << "</body>\n</html>\n";
    return;
  }
  os << "<h2>Every plan that fits: "
     << (t.serving ? "time per output token" : "iteration time")
     << " against peak memory</h2>\n"
     << "<p>The Pareto front (no plan is both faster and smaller) is joined "
        "and labelled; hover a dot for its plan.</p>\n";
  paretoChart(r, t, os);
  if (t.serving) {
    os << "<h2>The " << shown(r, t)
       << " with the most decode tokens/s per GPU</h2>\n<table>\n<tr>"
       << "<th>#</th><th>plan (--stage-infer)</th><th>requests</th>"
       << "<th>peak memory</th><th>TTFT</th><th>TPOT</th>"
       << "<th>decode tokens/s per GPU</th></tr>\n";
    for (size_t i = 0, e = shown(r, t); i < e; ++i) {
      const Candidate &c = r.ranked[i];
      os << "<tr><td class=\"n\">" << i + 1 << "</td><td><code>"
         << escape(c.plan.options()) << "</code></td><td class=\"n\">"
         << c.plan.batch << "</td><td class=\"n\">"
         << gib(double(c.estimate.peakBytes)) << "</td><td class=\"n\">"
         << seconds(c.estimate.ttftSeconds) << "</td><td class=\"n\">"
         << seconds(c.estimate.tpotSeconds) << "</td><td class=\"n\">"
         << int64_t(std::llround(c.tokensPerSecondPerGpu)) << "</td></tr>\n";
    }
    os << "</table>\n</body>\n</html>\n";
    return;
  }
  os << "<h2>The " << shown(r, t) << " fastest</h2>\n<table>\n<tr><th>#</th>"
     << "<th>plan (--stage-train)</th><th>peak memory</th><th>iteration</th>"
     << "<th>MFU</th><th>tokens/s per GPU</th></tr>\n";
  for (size_t i = 0, e = shown(r, t); i < e; ++i) {
    const Candidate &c = r.ranked[i];
    os << "<tr><td class=\"n\">" << i + 1 << "</td><td><code>"
       << escape(c.plan.options()) << "</code></td><td class=\"n\">"
       << gib(double(c.estimate.peakBytes)) << "</td><td class=\"n\">"
       << seconds(c.estimate.iterationSeconds) << "</td><td class=\"n\">"
       << fixed(100 * c.mfu, 1) << "%</td><td class=\"n\">"
       << int64_t(std::llround(c.tokensPerSecondPerGpu)) << "</td></tr>\n";
  }
  os << "</table>\n</body>\n</html>\n";
}

namespace {
/// `v` as %g prints it.
std::string general(double v) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%g", v);
  return s;
}

/// The time a sweep point's best plan is ranked by, and its name.
double bestSeconds(const SweepPoint &p) {
  return p.best ? chartSeconds(*p.best) : 0;
}

/// The best time against the swept value, a dot per point.
void sweepChart(const std::vector<SweepPoint> &points, const SweepRange &range,
                const SearchTitle &t, llvm::raw_ostream &os) {
  const double width = 760, height = 360, left = 80, right = 20, top = 20,
               bottom = 50;
  double tMax = 0, vMin = range.from, vMax = range.to;
  if (vMin > vMax)
    std::swap(vMin, vMax);
  for (const SweepPoint &p : points)
    tMax = std::max(tMax, bestSeconds(p));
  if (tMax <= 0)
    return;
  double span = vMax > vMin ? vMax - vMin : 1;
  auto x = [&](double v) {
    return left + (width - left - right) * (v - vMin) / span;
  };
  auto y = [&](double s) {
    return height - bottom - (height - top - bottom) * s / tMax;
  };
  openChart(width, height, left, right, top, bottom, os);
  os << "<text x=\"" << (left + width - right) / 2 << "\" y=\"" << height - 8
     << "\" text-anchor=\"middle\">" << escape(range.key) << " ("
     << escape(t.device.name) << ")</text>\n";
  os << "<text x=\"14\" y=\"" << top + 10 << "\">"
     << (t.serving ? "time per output token" : "iteration") << "</text>\n";
  for (int k = 0; k <= 4; ++k) {
    double s = tMax * k / 4;
    os << "<text class=\"tick\" x=\"" << left - 6 << "\" y=\"" << y(s) + 4
       << "\" text-anchor=\"end\">" << seconds(s) << "</text>\n";
  }
  std::string line;
  for (const SweepPoint &p : points) {
    if (!p.best)
      continue;
    line += fixed(x(p.value), 1) + "," + fixed(y(bestSeconds(p)), 1) + " ";
  }
  os << "<polyline fill=\"none\" stroke=\"#d60\" points=\"" << line
     << "\"/>\n";
  for (const SweepPoint &p : points) {
    os << "<text class=\"tick\" x=\"" << x(p.value) << "\" y=\""
       << y(0) + 16 << "\" text-anchor=\"middle\">"
       << llvm::format("%g", p.value) << "</text>\n";
    if (p.best)
      os << "<circle class=\"sweep\" cx=\"" << fixed(x(p.value), 1)
         << "\" cy=\"" << fixed(y(bestSeconds(p)), 1)
         << "\" r=\"4\" fill=\"#d60\"><title>" << escape(p.best->plan.options())
         << ": " << seconds(bestSeconds(p)) << "</title></circle>\n";
  }
  os << "</svg>\n";
}
} // namespace

void mlir::stage::explore::printSweep(const std::vector<SweepPoint> &points,
                                      const SweepRange &range,
                                      const SearchTitle &t,
                                      llvm::StringRef format,
                                      llvm::raw_ostream &os) {
  const char *timeName = t.serving ? "tpot_seconds" : "iteration_seconds";
  if (format == "json") {
    llvm::json::Array all;
    for (const SweepPoint &p : points) {
      llvm::json::Object o{{range.key, p.value}, {"fitting_plans", p.fitting}};
      if (p.best) {
        o["plan"] = p.best->plan.options();
        o[timeName] = bestSeconds(p);
        o["peak_memory_bytes"] = p.best->estimate.peakBytes;
        o["tokens_per_second_per_gpu"] = p.best->tokensPerSecondPerGpu;
      }
      all.push_back(std::move(o));
    }
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(all))) << "\n";
    return;
  }
  if (format == "csv") {
    os << range.key << ",plan," << timeName
       << ",peak_memory_bytes,tokens_per_second_per_gpu\n";
    for (const SweepPoint &p : points) {
      os << llvm::format("%.9g", p.value) << ",";
      if (p.best)
        os << "\"" << p.best->plan.options() << "\","
           << llvm::format("%.9g", bestSeconds(p)) << ","
           << p.best->estimate.peakBytes << ","
           << int64_t(std::llround(p.best->tokensPerSecondPerGpu));
      else
        os << ",,,";
      os << "\n";
    }
    return;
  }
  std::string heading = t.model + " on " + std::to_string(t.gpus) + " GPUs (" +
                        t.device.displayName() + "), the best plan as " +
                        range.key + " goes from " +
                        general(range.from) + " to " + general(range.to);
  std::string timeLabel = t.serving ? "time per output token" : "iteration";
  if (format == "html") {
    os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
       << escape(heading) << "</title><style>body{font-family:sans-serif}"
          ".tick{font-size:11px}td,th{padding:2px 8px}</style></head><body>\n"
       << "<h1>" << escape(heading) << "</h1>\n";
    sweepChart(points, range, t, os);
    os << "<table><tr><th>" << escape(range.key) << "</th><th>best plan</th><th>"
       << timeLabel << "</th></tr>\n";
    for (const SweepPoint &p : points)
      os << "<tr><td>" << llvm::format("%g", p.value) << "</td><td>"
         << (p.best ? escape(p.best->plan.options()) : "no plan fits")
         << "</td><td>" << (p.best ? seconds(bestSeconds(p)) : "") << "</td></tr>\n";
    os << "</table></body></html>\n";
    return;
  }
  os << heading << ".\n\n| " << range.key << " | best plan (--stage-train) | "
     << timeLabel << " | vs the first |\n|---:|---|---:|---:|\n";
  double first = points.empty() ? 0 : bestSeconds(points.front());
  for (const SweepPoint &p : points) {
    os << "| " << llvm::format("%g", p.value) << " | ";
    if (!p.best) {
      os << "no plan fits | | |\n";
      continue;
    }
    os << "`" << p.best->plan.options() << "` | " << seconds(bestSeconds(p))
       << " | ";
    if (first > 0)
      os << llvm::format("%.3f", bestSeconds(p) / first);
    os << " |\n";
  }
}

static llvm::json::Object toJson(const StreamCandidate &c) {
  const report::StreamEstimate &e = c.estimate;
  return llvm::json::Object{
      {"tp", c.tp},
      {"replicas", c.replicas},
      {"gpus", e.gpus},
      {"max_batched_tokens", c.maxBatchedTokens},
      {"stage_infer", c.inferOptions},
      {"scheduler", c.scheduler},
      {"meets_slo", e.meetsSlo},
      {"slo_attainment", e.attainment},
      {"goodput_requests_per_second", c.goodput},
      {"goodput_requests_per_second_per_gpu", c.goodputPerGpu},
      {"throughput_tokens_per_second_per_gpu", e.throughputPerGpu},
      {"ttft_seconds", llvm::json::Object{{"p50", e.ttftP50}, {"p99", e.ttftP99}}},
      {"tpot_seconds", llvm::json::Object{{"p50", e.tpotP50}, {"p99", e.tpotP99}}},
      {"preemptions", e.preemptions}};
}

void mlir::stage::explore::printStreamSearch(const StreamSearchResult &r,
                                             const SearchTitle &t,
                                             llvm::StringRef format,
                                             llvm::raw_ostream &os) {
  size_t n = std::min<size_t>(r.ranked.size(), size_t(std::max<int64_t>(t.top, 1)));
  if (format == "json") {
    llvm::json::Array plans;
    for (size_t i = 0; i < n; ++i)
      plans.push_back(toJson(r.ranked[i]));
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(plans))) << "\n";
    return;
  }
  if (format == "csv") {
    os << "rank,tp,replicas,gpus,max_batched_tokens,meets_slo,slo_attainment,"
          "goodput_requests_per_second_per_gpu,"
          "throughput_tokens_per_second_per_gpu,ttft_p50,ttft_p99,tpot_p50,"
          "tpot_p99,preemptions\n";
    for (size_t i = 0; i < n; ++i) {
      const StreamCandidate &c = r.ranked[i];
      const report::StreamEstimate &e = c.estimate;
      os << i + 1 << "," << c.tp << "," << c.replicas << "," << e.gpus << ","
         << c.maxBatchedTokens << "," << (e.meetsSlo ? 1 : 0) << ","
         << llvm::format("%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g", e.attainment,
                         c.goodputPerGpu, e.throughputPerGpu, e.ttftP50,
                         e.ttftP99, e.tpotP50, e.tpotP99)
         << "," << e.preemptions << "\n";
    }
    return;
  }
  os << "# Serving plans of " << t.model << " for a request stream on " << t.gpus
     << " x " << t.device.displayName() << "\n\n"
     << r.compiled << " tensor-parallel degrees compiled, " << r.evaluated
     << " plans served the stream";
  for (const auto &[why, count] : r.excluded)
    os << "; left out (" << count << "): " << why;
  os << ". Wall time " << fixed(t.wallSeconds, 2) << " s.\n\n";
  os << "Goodput: the highest arrival rate (the workload's arrivals sped up "
        "or slowed down) at which the plan still meets the SLO; the other "
        "columns at the workload's own rate.\n\n";
  os << "| # | stage-infer | --scheduler | goodput req/s/GPU | meets SLO | "
        "attainment | tokens/s/GPU | TTFT p50 / p99 | TPOT p50 / p99 |\n"
        "|---:|---|---|---|---:|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < n; ++i) {
    const StreamCandidate &c = r.ranked[i];
    const report::StreamEstimate &e = c.estimate;
    os << "| " << i + 1 << " | `" << c.inferOptions << "` | `" << c.scheduler
       << "` | " << fixed(c.goodputPerGpu, 3) << " | "
       << (e.meetsSlo ? "yes" : "no") << " | " << fixed(e.attainment, 3)
       << " | "
       << fixed(e.throughputPerGpu, 1) << " | " << seconds(e.ttftP50) << " / "
       << seconds(e.ttftP99) << " | " << seconds(e.tpotP50) << " / "
       << seconds(e.tpotP99) << " |\n";
  }
}
