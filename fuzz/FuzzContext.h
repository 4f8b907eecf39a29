//===- FuzzContext.h - The MLIR context of the fuzz targets -----*- C++ -*-===//
//
// One context per fuzzing process, with the stage and func dialects loaded
// (stage's own parsers: the upstream dialects frontends use are upstream's
// to fuzz) and no threads; diagnostics are dropped while `Quiet` lives.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_FUZZ_FUZZCONTEXT_H
#define STAGE_FUZZ_FUZZCONTEXT_H

#include "Stage/Dialect/Stage/IR/StageDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

namespace stage_fuzz {

inline mlir::MLIRContext &getContext() {
  static mlir::MLIRContext *ctx = [] {
    auto *c = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    c->loadDialect<mlir::stage::StageDialect, mlir::func::FuncDialect>();
    return c;
  }();
  return *ctx;
}

/// Drops every diagnostic while alive: bad input is expected.
struct Quiet : mlir::ScopedDiagnosticHandler {
  explicit Quiet(mlir::MLIRContext &ctx)
      : ScopedDiagnosticHandler(
            &ctx, [](mlir::Diagnostic &) { return mlir::success(); }) {}
};

} // namespace stage_fuzz

#endif // STAGE_FUZZ_FUZZCONTEXT_H
