//===- ReportModel.cpp - Costs of the functions of a module ---------------===//

#include "ReportModel.h"

#include "ReportFormat.h"
#include "ServingReport.h"
#include "StageReport.h"

#include "Stage/Analysis/Bindings.h"
#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Analysis/ParameterAnalysis.h"
#include "Stage/Analysis/RankClasses.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

const Quantity *Section::find(StringRef k) const {
  for (const Quantity &q : rows)
    if (q.key == k)
      return &q;
  return nullptr;
}

const Section *mlir::stage::report::findSection(ArrayRef<Section> sections,
                                                StringRef key) {
  for (const Section &s : sections)
    if (s.key == key)
      return &s;
  return nullptr;
}

const Section *StageReport::find(StringRef k) const {
  return findSection(sections, k);
}

const Section *RequestsReport::find(StringRef k) const {
  return findSection(sections, k);
}

static FailureOr<Quantity> quantity(Operation *at, std::string key,
                                    std::string label, std::string unit,
                                    const sym::Expr &e,
                                    const sym::Bindings &b) {
  sym::Result<sym::Rational> v = e.evaluateRational(b);
  if (!v)
    return at->emitError(label) << ": " << v.error();
  return Quantity{std::move(key), std::move(label), std::move(unit), e, *v};
}

/// The parameter counts of `fn`; `whole` maps every parallel degree to 1,
/// which turns a partitioned step's local shapes into the whole model's.
static FailureOr<Section> parameterSection(func::FuncOp fn,
                                           const sym::Bindings &b,
                                           const sym::Substitution &whole,
                                           std::string key, std::string title,
                                           bool contractions) {
  FailureOr<ParameterCounts> p = countParameters(fn);
  if (failed(p))
    return failure();
  Section params{std::move(key), std::move(title), {}};
  if (p->total.isZero())
    return params;
  struct Row {
    const char *key, *label;
    sym::Expr expr;
    bool show;
  } prows[] = {
      {"total", "parameters", p->total, true},
      {"embedding", "embedding parameters", p->embedding, true},
      {"attention", "attention parameters", p->attention,
       !p->attention.isZero() || p->ssm.isZero()},
      {"ssm", "state-space parameters", p->ssm, !p->ssm.isZero()},
      {"dense", "dense parameters", p->dense, true},
      {"expert", "expert parameters", p->expert, p->hasExperts},
      {"active_per_token", "active parameters per token", p->activePerToken,
       p->hasExperts && p->knowsActive},
      {"in_contractions", "parameters in contractions", p->inContractions,
       contractions},
  };
  for (const Row &row : prows) {
    if (!row.show)
      continue;
    sym::Result<sym::Expr> e = row.expr.substitute(whole);
    if (!e)
      return fn.emitError(row.label) << ": " << e.error();
    FailureOr<Quantity> q = quantity(fn, row.key, row.label, "", *e, b);
    if (failed(q))
      return failure();
    params.rows.push_back(*q);
  }
  return params;
}

static FailureOr<FunctionReport> buildFunction(func::FuncOp fn,
                                               const sym::Bindings &b,
                                               bool partitioned) {
  FunctionReport r;
  r.name = fn.getSymName().str();
  r.scope = partitioned ? "one rank (local shapes)" : "the whole model";
  Cost c = getTotalCost(fn);
  Section flops{"flops", "FLOPs", {}};
  Section bytes{"bytes", "Memory traffic", {}};
  struct Row {
    Section &section;
    const char *key, *label, *unit;
    sym::Expr expr;
  } rows[] = {
      {flops, "contraction", "contraction FLOPs", "FLOP", c.contractionFlops},
      {flops, "other", "other FLOPs", "FLOP", c.otherFlops},
      {flops, "total", "total FLOPs", "FLOP", c.flops()},
      {bytes, "total", "bytes read and written", "B", c.bytes},
  };
  for (Row &row : rows) {
    FailureOr<Quantity> q =
        quantity(fn, row.key, row.label, row.unit, row.expr, b);
    if (failed(q))
      return failure();
    row.section.rows.push_back(*q);
  }
  r.sections.push_back(std::move(flops));
  r.sections.push_back(std::move(bytes));

  // A training iteration: FLOPs per phase.
  bool training = false;
  fn.walk([&](MicrobatchesOp) { training = true; });
  if (training) {
    PhaseCosts pc = getPhaseCosts(fn);
    Section phases{"phases", "FLOPs per phase of the iteration", {}};
    for (Phase p : kTrainingPhases) {
      std::string name = getPhaseName(p);
      for (auto [suffix, label, e] :
           {std::tuple<const char *, const char *, sym::Expr>{
                "", " FLOPs", pc.of(p).flops()},
            {"_contraction", " contraction FLOPs", pc.of(p).contractionFlops}}) {
        FailureOr<Quantity> q = quantity(fn, name + suffix, name + label,
                                         "FLOP", e, b);
        if (failed(q))
          return failure();
        phases.rows.push_back(*q);
      }
      if (p == Phase::Backward) {
        FailureOr<Quantity> kernel = quantity(
            fn, kAttentionKernelRecomputeKey, kAttentionKernelRecomputeLabel,
            "FLOP", pc.attentionKernelRecomputeFlops, b);
        if (failed(kernel))
          return failure();
        phases.rows.push_back(*kernel);
      }
    }
    r.sections.push_back(std::move(phases));
  }

  FailureOr<Section> params =
      parameterSection(fn, b, {}, "parameters", "Parameters", true);
  if (failed(params))
    return failure();
  if (!params->rows.empty())
    r.sections.push_back(std::move(*params));
  return r;
}

bool mlir::stage::report::isTrainingStep(ModuleOp module, func::FuncOp fn) {
  bool loop = fn.walk([&](Operation *op) {
                  return isa<MicrobatchesOp, ServeOp>(op)
                             ? WalkResult::interrupt()
                             : WalkResult::advance();
                }).wasInterrupted();
  return loop && getGrid(module);
}

const Section *Report::findTotal(StringRef k) const {
  return findSection(totals, k);
}

FailureOr<Report> mlir::stage::report::buildReport(ModuleOp module,
                                                   const sym::Bindings &b,
                                                   const ReportRequest &request) {
  if (failed(verifyBindings(module, b)))
    return failure();
  SymbolicCache::Evaluation evaluating(b);
  Report report;
  report.bindings = b;
  report.device = request.device;
  GridOp grid = getGrid(module);
  func::FuncOp step;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (isTrainingStep(module, fn)) {
      if (step)
        return fn.emitError("the module has several training steps; the "
                            "report covers one");
      step = fn;
      continue;
    }
    FailureOr<FunctionReport> f = buildFunction(fn, b, bool(grid));
    if (failed(f))
      return failure();
    report.functions.push_back(std::move(*f));
  }
  if (report.functions.empty() && !step)
    return module.emitError("the module has no function to report on");
  if (step) {
    JobReport job;
    for (const std::string &axis : grid.getAxisNames()) {
      auto it = b.find(axis);
      int64_t d = it == b.end() ? 1 : it->second;
      job.axes.push_back({axis, d});
      job.gpus *= d;
    }
    job.ranksPerStage = job.gpus / std::max<int64_t>(1, job.degree("pp"));
    job.serving = getStepStructure(step)->serving;
    report.job = job;
    // The whole model: every degree 1 turns local shapes into global ones.
    sym::Substitution whole;
    for (const auto &[axis, d] : job.axes)
      whole[axis] = sym::Expr(1);
    if (!request.numbersOnly) {
      FailureOr<Section> model = parameterSection(
          step, b, whole, "model", "The model (whole, not per rank)", false);
      if (failed(model))
        return failure();
      if (!model->rows.empty())
        report.totals.push_back(std::move(*model));
    }
    // Time estimates need a device: the default unless the request names one.
    DeviceModel device = request.device ? *request.device : getDefaultDevice();
    report.roofline = device;
    if (failed(job.serving
                   ? buildServingReports(step, b, request.numbersOnly, device,
                                         report)
                   : buildStageReports(step, b, device, request, report)))
      return failure();
    // The same device's memory is the limit to warn at.
    for (const StageReport &s : report.stages)
      if (const Quantity *peak = s.find("memory")->find("peak");
          !request.numbersOnly &&
          peak->value.toDouble() > device.memoryCapacity)
        report.warnings.push_back(
            "stage " + std::to_string(s.stage) + " peaks at " +
            humanReadable(peak->value, "B") + ", more than the " +
            humanReadable(sym::Rational(int64_t(device.memoryCapacity)), "B") +
            " of " + device.displayName());
  }
  return report;
}
