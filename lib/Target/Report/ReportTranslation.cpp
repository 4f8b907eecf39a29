//===- ReportTranslation.cpp - --stage-to-report --------------------------===//

#include "Stage/Target/Report/ReportTranslation.h"

#include "ReportFormat.h"
#include "ReportModel.h"

#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Target/TargetOptions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"

using namespace mlir;
using namespace mlir::stage;

namespace {
enum class ReportFormat { Markdown, Json };

struct ReportOptions {
  llvm::cl::opt<ReportFormat> format{
      "format", llvm::cl::desc("Format of --stage-to-report"),
      llvm::cl::init(ReportFormat::Markdown),
      llvm::cl::values(
          clEnumValN(ReportFormat::Markdown, "markdown", "Markdown tables"),
          clEnumValN(ReportFormat::Json, "json", "JSON"))};
};
} // namespace

static ReportOptions &reportOptions() {
  static ReportOptions options;
  return options;
}

void mlir::stage::registerToReportTranslation() {
  (void)reportOptions();
  registerBindingOption();
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
        FailureOr<report::Report> r = report::buildReport(module, *b);
        if (failed(r))
          return failure();
        if (reportOptions().format == ReportFormat::Json)
          report::printJson(*r, os);
        else
          report::printMarkdown(*r, os);
        return success();
      },
      [](DialectRegistry &registry) {
        registry.insert<StageDialect, func::FuncDialect>();
      });
}
