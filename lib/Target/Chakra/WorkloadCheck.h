//===- WorkloadCheck.h - What ASTRA-sim needs, checked before writing -*- C++ -*-===//
//
// The hangs and silent errors of CHAKRA.md, checked on the per-stage node
// lists before any file is written: dependencies on earlier nodes only
// (topological, acyclic), positive FLOPs and bytes, tags that fit, peers
// that exist, every receive with its send, and a run of the stages'
// representatives (collectives are within a stage, so only send/recv cross
// stages) that must reach every node.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRA_WORKLOADCHECK_H
#define STAGE_LIB_TARGET_CHAKRA_WORKLOADCHECK_H

#include "Workload.h"

namespace mlir::stage::chakra {

/// Reports the first problem at `loc`.
LogicalResult checkWorkload(const Workload &w, Location loc);

} // namespace mlir::stage::chakra

#endif // STAGE_LIB_TARGET_CHAKRA_WORKLOADCHECK_H
