//===- ReportTranslation.cpp - --stage-to-report --------------------------===//

#include "Stage/Target/Report/ReportTranslation.h"

#include "ReportFormat.h"
#include "ReportModel.h"

#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Target/TargetOptions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"

using namespace mlir;
using namespace mlir::stage;

namespace {
enum class ReportFormat { Markdown, Json, Csv, Html };

struct ReportOptions {
  llvm::cl::opt<ReportFormat> format{
      "format", llvm::cl::desc("Format of --stage-to-report"),
      llvm::cl::init(ReportFormat::Markdown),
      llvm::cl::values(
          clEnumValN(ReportFormat::Markdown, "markdown", "Markdown tables"),
          clEnumValN(ReportFormat::Json, "json", "JSON"),
          clEnumValN(ReportFormat::Csv, "csv", "CSV, one row per number"),
          clEnumValN(ReportFormat::Html, "html",
                     "a self-contained page with SVG charts"))};
  llvm::cl::opt<std::string> failIfOver{
      "fail-if-over",
      llvm::cl::desc("--stage-to-report: exit non-zero when a rank's memory "
                     "peak exceeds this size (as in 80GiB)"),
      llvm::cl::value_desc("size")};
};
} // namespace

static ReportOptions &reportOptions() {
  static ReportOptions options;
  return options;
}

void mlir::stage::registerToReportTranslation() {
  (void)reportOptions();
  registerBindingOption();
  registerDeviceOptions();
  TranslateFromMLIRRegistration reg(
      "stage-to-report",
      "FLOPs and bytes of each function, symbolic and bound",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        reportLocationsOnly(op->getContext());
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("expected a module");
        FailureOr<sym::Bindings> b = getEffectiveBindings(module);
        if (failed(b))
          return failure();
        const ReportOptions &o = reportOptions();
        std::optional<double> limit;
        if (!o.failIfOver.empty() &&
            !(limit = parseByteSize(o.failIfOver)))
          return emitOptionError(module) << "--fail-if-over=" << o.failIfOver
                                         << ": expected a size, as in 80GiB";
        FailureOr<std::optional<DeviceModel>> device = getDeviceModel(module, "");
        if (failed(device))
          return failure();
        FailureOr<report::Report> r =
            report::buildReport(module, *b, report::ReportRequest{*device});
        if (failed(r))
          return failure();
        switch (o.format) {
        case ReportFormat::Json:
          report::printJson(*r, os);
          break;
        case ReportFormat::Csv:
          report::printCsv(*r, os);
          break;
        case ReportFormat::Html:
          report::printHtml(*r, os);
          break;
        case ReportFormat::Markdown:
          report::printMarkdown(*r, os);
          break;
        }
        if (limit)
          for (const report::StageReport &s : r->stages)
            if (const report::Quantity *peak = s.find("memory")->find("peak");
                peak->value.toDouble() > *limit)
              return module.emitError("stage ")
                     << s.stage << " peaks at "
                     << report::humanReadable(peak->value, "B")
                     << ", over --fail-if-over=" << o.failIfOver;
        return success();
      },
      [](DialectRegistry &registry) {
        registry.insert<StageDialect, func::FuncDialect>();
      });
}
