//===- StageAttrs.h - Attributes and types of the stage dialect -*- C++ -*-===//

#ifndef STAGE_DIALECT_STAGE_IR_STAGEATTRS_H
#define STAGE_DIALECT_STAGE_IR_STAGEATTRS_H

#include "Stage/Dialect/Stage/IR/StageDialect.h"
#include "Stage/Support/SymExpr.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/Types.h"

#include "Stage/Dialect/Stage/IR/StageOpsEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Stage/Dialect/Stage/IR/StageOpsAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Stage/Dialect/Stage/IR/StageOpsTypes.h.inc"

namespace mlir::stage {

/// Parses a bare symbolic expression (`2*B*S/tp`) with the MLIR lexer.
FailureOr<sym::Expr> parseSymExpr(AsmParser &parser);
void printSymExpr(AsmPrinter &printer, const sym::Expr &e);

/// Custom directives of the op formats: `custom<SymExpr>` prints an
/// expression attribute bare, `custom<AxisList>` prints `[dp, tp]`.
ParseResult parseSymExpr(OpAsmParser &parser, ExprAttr &attr);
void printSymExpr(OpAsmPrinter &printer, Operation *op, ExprAttr attr);
ParseResult parseAxisList(OpAsmParser &parser, ArrayAttr &axes);
void printAxisList(OpAsmPrinter &printer, Operation *op, ArrayAttr axes);

/// A tensor type from plain expressions.
inline SymTensorType getSymTensorType(ArrayRef<sym::Expr> dims, Type elementType) {
  return SymTensorType::get(elementType.getContext(), dims, elementType);
}

} // namespace mlir::stage

#endif // STAGE_DIALECT_STAGE_IR_STAGEATTRS_H
