//===- StageDialect.h - The stage dialect -----------------------*- C++ -*-===//

#ifndef STAGE_DIALECT_STAGE_IR_STAGEDIALECT_H
#define STAGE_DIALECT_STAGE_IR_STAGEDIALECT_H

#include "Stage/Support/SymExpr.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/RWMutex.h"

#include "Stage/Dialect/Stage/IR/StageOpsDialect.h.inc"

#endif // STAGE_DIALECT_STAGE_IR_STAGEDIALECT_H
