//===- ReportFormat.cpp - Markdown, JSON and CSV renderings ---------------===//

#include "ReportFormat.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

std::string mlir::stage::report::exactValue(const sym::Rational &v) {
  if (v.isInteger())
    return sym::toString(v.numerator());
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.6g", v.toDouble());
  return s;
}

std::string mlir::stage::report::humanReadable(const sym::Rational &v,
                                               StringRef unit) {
  std::string s;
  llvm::raw_string_ostream os(s);
  double d = v.toDouble();
  if (unit == "s") {
    if (d >= 1.0 || d == 0.0)
      os << llvm::format("%.3f", d) << " s";
    else if (d >= 1e-3)
      os << llvm::format("%.3f", d * 1e3) << " ms";
    else
      os << llvm::format("%.3f", d * 1e6) << " us";
    return s;
  }
  static const char *const prefixes[] = {"", "k", "M", "G", "T", "P", "E", "Z", "Y"};
  unsigned i = 0;
  while (std::abs(d) >= 1000.0 && i + 1 < std::size(prefixes)) {
    d /= 1000.0;
    ++i;
  }
  if (i == 0 && v.isInteger())
    os << exactValue(v);
  else
    os << llvm::format("%.3f", d) << " " << prefixes[i];
  os << unit;
  return s;
}

std::vector<std::pair<std::string, std::string>>
mlir::stage::report::stageRowKeys(const Report &report, StringRef section) {
  std::vector<std::pair<std::string, std::string>> keys;
  for (const StageReport &s : report.stages)
    if (const Section *sec = s.find(section))
      for (const Quantity &q : sec->rows)
        if (llvm::none_of(keys, [&](auto &k) { return k.first == q.key; }))
          keys.push_back({q.key, q.label});
  return keys;
}

static void printBindings(const Report &report, llvm::raw_ostream &os) {
  bool first = true;
  for (const auto &[k, v] : report.bindings) {
    os << (first ? "" : ", ") << k << "=" << v;
    first = false;
  }
}

std::string mlir::stage::report::describeJob(const JobReport &job) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << job.gpus << " GPUs = ";
  for (auto [i, axis] : llvm::enumerate(job.axes))
    os << (i ? " x " : "") << axis.first << " " << axis.second;
  os << " (grid axes outermost first: the innermost are adjacent ranks). "
     << "Each pipeline stage runs on " << job.ranksPerStage << " of them; "
     << "the per-rank tables show one rank of each stage.";
  int64_t ep = job.degree("ep");
  if (ep > 1)
    os << " Expert parallelism is a grid axis of its own here; Megatron-LM "
          "carves it out of the data-parallel group instead: in its terms this "
          "plan has a data-parallel size of dp x ep = "
       << job.degree("dp") * ep << " with an expert-model-parallel size of "
       << ep << ".";
  return s;
}

static void printTable(const Section &s, llvm::raw_ostream &os) {
  os << "\n## " << s.title << "\n\n";
  os << "| quantity | symbolic | value | |\n";
  os << "|---|---|---:|---:|\n";
  for (const Quantity &q : s.rows)
    os << "| " << q.label << " | "
       << (q.expr ? "`" + q.expr->str() + "`" : std::string()) << " | "
       << exactValue(q.value) << " | " << humanReadable(q.value, q.unit)
       << " |\n";
}

void mlir::stage::report::printMarkdown(const Report &report,
                                        llvm::raw_ostream &os) {
  for (const FunctionReport &f : report.functions) {
    os << "# stage report: @" << f.name << " (" << f.scope << ")\n";
    for (const Section &s : f.sections)
      printTable(s, os);
    os << "\n";
  }
  if (report.job) {
    os << "# stage report: "
       << (report.job->serving ? "serving" : "a training step") << " on "
       << report.job->gpus << " GPUs\n\n"
       << describeJob(*report.job) << "\n";
    for (const Section &s : report.totals)
      printTable(s, os);
    os << "\n";
  }
  if (const std::optional<RequestsReport> &rq = report.requests) {
    os << "# Request stream: " << rq->workload << "\n";
    for (const Section &s : rq->sections)
      printTable(s, os);
    if (!rq->window.empty()) {
      os << "\n## Iterations\n\n| # | replica | start (s) | seconds | "
            "decodes | prompt tokens | running | waiting | KV blocks |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
      for (const RequestsReport::Iteration &it : rq->window)
        os << "| " << it.index << " | " << it.replica << " | "
           << llvm::format("%.9g", it.start) << " | "
           << llvm::format("%.9g", it.seconds) << " | " << it.decodes << " | "
           << it.promptTokens << " | " << it.running << " | " << it.waiting
           << " | " << it.kvBlocks << " |\n";
    }
    os << "\n";
  }
  if (!report.stages.empty()) {
    os << "# Per rank, by pipeline stage\n\n";
    if (const std::optional<PipelineReport> &p = report.pipeline)
      os << "Schedule " << p->schedule << ", pp=" << p->stages
         << ", " << p->virtualStages << " chunk(s) per rank, "
         << p->microBatches << " micro-batch(es); bubble "
         << llvm::format("%.1f", 100.0 * p->bubble) << "% of compute time.\n";
    for (const Section &proto : report.stages.front().sections) {
      os << "\n## " << proto.title << "\n\n| quantity |";
      for (const StageReport &s : report.stages)
        os << " stage " << s.stage
           << (s.layers.empty() ? "" : " (layers " + s.layers + ")") << " |";
      os << "\n|---|";
      for (size_t i = 0; i < report.stages.size(); ++i)
        os << "---:|";
      os << "\n";
      for (const auto &[key, label] : stageRowKeys(report, proto.key)) {
        os << "| " << label << " |";
        for (const StageReport &s : report.stages) {
          const Section *sec = s.find(proto.key);
          const Quantity *q = sec ? sec->find(key) : nullptr;
          os << " " << (q ? humanReadable(q->value, q->unit) : "-") << " |";
        }
        os << "\n";
      }
    }
    os << "\nMemory peaks at:";
    for (const StageReport &s : report.stages)
      os << " stage " << s.stage << ", " << s.peakAt << ";";
    os << "\n";
  }
  for (const std::string &w : report.warnings)
    os << "\n**Warning:** " << w << "\n";
  os << "\nBindings: ";
  printBindings(report, os);
  os << "\n";
}

/// Integers of any size are written exactly; JSON does not bound them.
static void writeNumber(llvm::json::OStream &j, const sym::Rational &v) {
  if (v.isInteger())
    j.rawValue(sym::toString(v.numerator()));
  else
    j.value(v.toDouble());
}

static void writeSection(llvm::json::OStream &j, const Section &s) {
  j.attributeObject(s.key, [&] {
    for (const Quantity &q : s.rows)
      j.attributeObject(q.key, [&] {
        if (q.expr)
          j.attribute("expr", q.expr->str());
        j.attributeBegin("value");
        writeNumber(j, q.value);
        j.attributeEnd();
        j.attribute("unit", q.unit);
      });
  });
}

void mlir::stage::report::printJson(const Report &report,
                                    llvm::raw_ostream &os) {
  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attributeObject("bindings", [&] {
      for (const auto &[k, v] : report.bindings)
        j.attribute(k, v);
    });
    j.attributeArray("functions", [&] {
      for (const FunctionReport &f : report.functions)
        j.object([&] {
          j.attribute("name", f.name);
          j.attribute("scope", f.scope);
          for (const Section &s : f.sections)
            writeSection(j, s);
        });
    });
    if (const std::optional<JobReport> &job = report.job)
      j.attributeObject("job", [&] {
        j.attribute("gpus", job->gpus);
        if (job->serving)
          j.attribute("serving", true);
        j.attribute("ranks_per_stage", job->ranksPerStage);
        j.attributeObject("grid", [&] {
          for (const auto &[axis, d] : job->axes)
            j.attribute(axis, d);
        });
        j.attribute("description", describeJob(*job));
        for (const Section &s : report.totals)
          writeSection(j, s);
      });
    if (!report.stages.empty())
      j.attributeArray("stages", [&] {
        for (const StageReport &s : report.stages)
          j.object([&] {
            j.attribute("stage", s.stage);
            j.attribute("layers", s.layers);
            j.attribute("peak_at", s.peakAt);
            for (const Section &sec : s.sections)
              writeSection(j, sec);
          });
      });
    if (const std::optional<PipelineReport> &p = report.pipeline)
      j.attributeObject("pipeline", [&] {
        j.attribute("schedule", p->schedule);
        j.attribute("stages", p->stages);
        j.attribute("virtual_stages", p->virtualStages);
        j.attribute("micro_batches", p->microBatches);
        j.attribute("bubble", p->bubble);
        j.attributeArray("timeline", [&] {
          for (const std::vector<TimelineStep> &stage : p->timeline)
            j.array([&] {
              for (const TimelineStep &t : stage)
                j.object([&] {
                  j.attribute("forward", t.kind == StepKind::Forward);
                  if (t.kind == StepKind::InputGrad ||
                      t.kind == StepKind::WeightGrad)
                    j.attribute("part", t.kind == StepKind::InputGrad
                                            ? "input_grad"
                                            : "weight_grad");
                  j.attribute("chunk", t.chunk);
                  j.attribute("microbatch", t.microbatch);
                  j.attribute("start", t.start);
                  j.attribute("end", t.end);
                });
            });
        });
      });
    if (const std::optional<RequestsReport> &rq = report.requests)
      j.attributeObject("requests", [&] {
        j.attribute("workload", rq->workload);
        auto values = [&](const Section &s) {
          for (const Quantity &q : s.rows) {
            j.attributeBegin(q.key);
            writeNumber(j, q.value);
            j.attributeEnd();
          }
        };
        for (const Section &s : rq->sections) {
          if (s.key == "stream")
            values(s);
          else
            j.attributeObject(s.key, [&] { values(s); });
        }
        if (!rq->window.empty())
          j.attributeArray("iterations", [&] {
            for (const RequestsReport::Iteration &it : rq->window)
              j.object([&] {
                j.attribute("index", it.index);
                j.attribute("replica", it.replica);
                j.attribute("start", it.start);
                j.attribute("seconds", it.seconds);
                j.attribute("decodes", it.decodes);
                j.attribute("prompt_tokens", it.promptTokens);
                j.attribute("running", it.running);
                j.attribute("waiting", it.waiting);
                j.attribute("kv_blocks", it.kvBlocks);
              });
          });
        j.attributeArray("kv_cache_occupancy", [&] {
          for (auto [t, used] : rq->occupancy)
            j.array([&] {
              j.value(t);
              j.value(used);
            });
        });
      });
    if (report.device) {
      j.attribute("device", report.device->name);
      if (!report.device->overridden.empty())
        j.attributeArray("device_overrides", [&] {
          for (const std::string &o : report.device->overridden)
            j.value(o);
        });
    }
    j.attributeArray("warnings", [&] {
      for (const std::string &w : report.warnings)
        j.value(w);
    });
  });
  os << "\n";
}

static std::string csvField(StringRef s) {
  if (s.find_first_of(",\"\n") == StringRef::npos)
    return s.str();
  std::string out = "\"";
  for (char c : s)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void mlir::stage::report::printCsv(const Report &report, llvm::raw_ostream &os,
                                   StringRef scopePrefix, bool header) {
  if (header)
    os << "scope,section,key,label,unit,value,expr\n";
  auto rows = [&](const std::string &scope, const Section &s) {
    for (const Quantity &q : s.rows)
      os << csvField(scopePrefix.str() + scope) << "," << s.key << "," << q.key << ","
         << csvField(q.label) << "," << q.unit << "," << exactValue(q.value)
         << "," << csvField(q.expr ? q.expr->str() : "") << "\n";
  };
  for (const FunctionReport &f : report.functions)
    for (const Section &s : f.sections)
      rows("@" + f.name, s);
  for (const Section &s : report.totals)
    rows("job", s);
  for (const StageReport &st : report.stages)
    for (const Section &s : st.sections)
      rows("stage " + std::to_string(st.stage), s);
  if (report.requests)
    for (const Section &s : report.requests->sections)
      rows("requests", s);
}
