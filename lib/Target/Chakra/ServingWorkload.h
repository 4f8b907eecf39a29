//===- ServingWorkload.h - Per-rank-class node lists of serving -*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_CHAKRA_SERVINGWORKLOAD_H
#define STAGE_LIB_TARGET_CHAKRA_SERVINGWORKLOAD_H

#include "Workload.h"

#include "Stage/Dialect/Stage/IR/StageOps.h"

namespace mlir::stage::chakra {

/// The trace of the ranks that run `chunk` (a function or a pipeline stage)
/// whose serving program is `serve`.
FailureOr<ClassTrace> expandServingClass(Workload &w, const sym::Bindings &b,
                                         const DeviceModel *device,
                                         Operation *chunk, ServeOp serve);

} // namespace mlir::stage::chakra

#endif // STAGE_LIB_TARGET_CHAKRA_SERVINGWORKLOAD_H
