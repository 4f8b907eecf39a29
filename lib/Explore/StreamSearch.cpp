//===- StreamSearch.cpp - The best serving plan for a request stream ------===//

#include "Stage/Explore/StreamSearch.h"

#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Transforms/InferPipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::explore;

namespace {
/// Keeps the first error of what it wraps instead of printing it.
struct Quiet {
  explicit Quiet(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &d) {
          if (d.getSeverity() == DiagnosticSeverity::Error && first.empty())
            first = d.str();
          return success();
        }) {}
  std::string first;
  ScopedDiagnosticHandler handler;
};

/// `model` through stage-infer with `options`.
FailureOr<OwningOpRef<ModuleOp>> compile(ModuleOp model, StringRef options) {
  std::unique_ptr<InferPipelineOptions> o =
      InferPipelineOptions::createFromString(options);
  if (!o)
    return model.emitError("stage-infer options '") << options << "'";
  OwningOpRef<ModuleOp> step = model.clone();
  PassManager pm(model.getContext());
  if (failed(buildInferPipeline(pm, *o, [&](const Twine &msg) {
        return model.emitError(msg);
      })) ||
      failed(pm.run(*step)))
    return failure();
  return step;
}

/// The key=value items of a --scheduler string, by key.
std::map<std::string, std::string> schedulerItems(StringRef text) {
  std::map<std::string, std::string> items;
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef p : parts) {
    auto [k, v] = p.split('=');
    items[k.trim().str()] = v.trim().str();
  }
  return items;
}
} // namespace

FailureOr<StreamSearchResult>
mlir::stage::explore::searchStreams(ModuleOp model,
                                    const StreamSearchRequest &r) {
  FailureOr<sym::Bindings> bindings = getModuleBindings(model);
  if (failed(bindings))
    return failure();
  if (!bindings->count("S"))
    return model.emitError("a request-stream search needs a model with a "
                           "sequence length S");
  std::map<std::string, std::string> fixed = schedulerItems(r.stream.scheduler);
  if (fixed.count("replicas"))
    return model.emitError("--scheduler: the search chooses the replicas "
                           "(the GPUs over tp); leave replicas out");
  std::vector<int64_t> budgets = r.budgets;
  if (fixed.count("max-batched-tokens")) {
    int64_t b;
    if (StringRef(fixed["max-batched-tokens"]).getAsInteger(10, b) || b < 1)
      return model.emitError("--scheduler: max-batched-tokens must be a "
                             "positive integer");
    budgets = {b};
    fixed.erase("max-batched-tokens");
  }
  // A wrong workload or option is wrong for every plan: said once.
  if (failed(report::checkStreamOptions(model, r.stream)))
    return failure();
  std::string kept;
  for (const auto &[k, v] : fixed)
    kept += "," + k + "=" + v;

  StreamSearchResult result;
  int64_t S = bindings->at("S");
  for (int64_t tp = 1; tp <= r.gpus; ++tp) {
    if (r.gpus % tp)
      continue;
    // The chunk of the compiled program is bound per iteration: one chunk
    // of the whole prompt gives the program its shapes.
    std::string options = "tp=" + std::to_string(tp) +
                          " chunked-prefill=" + std::to_string(S) +
                          " decode-tokens=1";
    FailureOr<OwningOpRef<ModuleOp>> step;
    std::string why;
    {
      Quiet quiet(model.getContext());
      step = compile(model, options);
      why = quiet.first;
    }
    if (failed(step)) {
      ++result.excluded["does not compile: " + why];
      continue;
    }
    ++result.compiled;
    FailureOr<sym::Bindings> b = getModuleBindings(**step);
    if (failed(b))
      return failure();
    for (int64_t budget : budgets) {
      StreamCandidate c;
      c.tp = tp;
      c.replicas = r.gpus / tp;
      c.maxBatchedTokens = budget;
      c.inferOptions = "tp=" + std::to_string(tp) + " chunked-prefill=" +
                       std::to_string(S) + " decode-tokens=1";
      c.scheduler = "max-batched-tokens=" + std::to_string(budget) +
                    ",replicas=" + std::to_string(c.replicas) + kept;
      report::RequestStreamOptions stream = r.stream;
      stream.scheduler = c.scheduler;
      stream.window.clear();
      FailureOr<report::StreamEstimate> e;
      {
        Quiet quiet(model.getContext());
        e = report::estimateStream(**step, *b, r.device, stream);
        why = quiet.first;
      }
      ++result.evaluated;
      if (failed(e)) {
        ++result.excluded[why];
        continue;
      }
      c.estimate = *e;
      if (!r.stream.slo.empty() && e->arrivalRate > 0) {
        // The SLO's attainment falls as the load rises: bracket the highest
        // rate that meets it by doubling or halving, then bisect (in
        // ratio) to within 5%.
        auto meets = [&](double scale) {
          report::RequestStreamOptions s = stream;
          s.rateScale = scale;
          Quiet quiet(model.getContext());
          FailureOr<report::StreamEstimate> at =
              report::estimateStream(**step, *b, r.device, s);
          ++result.evaluated;
          return succeeded(at) && at->meetsSlo;
        };
        double lo = 0, hi = 0;
        if (e->meetsSlo) {
          lo = 1;
          for (hi = 2; hi <= 1024 && meets(hi); hi *= 2)
            lo = hi;
        } else {
          hi = 1;
          for (double s = 0.5; s >= 1.0 / 1024; s /= 2) {
            if (meets(s)) {
              lo = s;
              break;
            }
            hi = s;
          }
        }
        if (lo > 0 && hi <= 1024)
          while (hi / lo > 1.05) {
            double mid = std::sqrt(lo * hi);
            (meets(mid) ? lo : hi) = mid;
          }
        c.goodput = lo * e->arrivalRate;
        c.goodputPerGpu = c.goodput / double(e->gpus);
      }
      result.ranked.push_back(std::move(c));
    }
  }
  bool slo = !r.stream.slo.empty();
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [&](const StreamCandidate &a, const StreamCandidate &b) {
                     const report::StreamEstimate &x = a.estimate,
                                                  &y = b.estimate;
                     double gx = slo ? a.goodputPerGpu : x.throughputPerGpu;
                     double gy = slo ? b.goodputPerGpu : y.throughputPerGpu;
                     if (gx != gy)
                       return gx > gy;
                     return x.ttftP99 < y.ttftP99;
                   });
  return result;
}
