//===- StageTypes.cpp - Types of the stage dialect ------------------------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::stage;

#define GET_TYPEDEF_CLASSES
#include "Stage/Dialect/Stage/IR/StageOpsTypes.cpp.inc"

void StageDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "Stage/Dialect/Stage/IR/StageOpsTypes.cpp.inc"
      >();
}

static SmallVector<ExprAttr> toAttrs(MLIRContext *ctx,
                                     ArrayRef<sym::Expr> dims) {
  SmallVector<ExprAttr> attrs;
  for (const sym::Expr &d : dims)
    attrs.push_back(ExprAttr::get(ctx, d));
  return attrs;
}

SymTensorType SymTensorType::get(MLIRContext *ctx, ArrayRef<sym::Expr> dims,
                           Type elementType) {
  return Base::get(ctx, toAttrs(ctx, dims), elementType);
}

SmallVector<sym::Expr> SymTensorType::getDims() const {
  SmallVector<sym::Expr> dims;
  for (ExprAttr a : getShape())
    dims.push_back(a.getValue());
  return dims;
}

sym::Expr SymTensorType::getNumElements() const {
  auto &dialect = static_cast<StageDialect &>(getDialect());
  return dialect.getNumElementsOf(*this, [&] {
    sym::Expr n(1);
    for (ExprAttr a : getShape())
      n *= a.getValue();
    return n;
  });
}

int64_t SymTensorType::getElementBytes() const {
  unsigned bits = getElementType().getIntOrFloatBitWidth();
  return bits < 8 ? 1 : int64_t((bits + 7) / 8);
}

sym::Expr SymTensorType::getSizeInBytes() const {
  auto &dialect = static_cast<StageDialect &>(getDialect());
  return dialect.getSizeInBytesOf(
      *this, [&] { return getNumElements() * sym::Expr(getElementBytes()); });
}

SymTensorType SymTensorType::withDims(ArrayRef<sym::Expr> dims) const {
  return get(getContext(), dims, getElementType());
}

SymTensorType SymTensorType::withElementType(Type elementType) const {
  return Base::get(getContext(), getShape(), elementType);
}

SymTensorType SymTensorType::dropLeadingDim() const {
  return Base::get(getContext(), getShape().drop_front(), getElementType());
}

SymTensorType SymTensorType::stacked(const sym::Expr &count) const {
  SmallVector<ExprAttr> shape{ExprAttr::get(getContext(), count)};
  llvm::append_range(shape, getShape());
  return Base::get(getContext(), shape, getElementType());
}

LogicalResult SymTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<ExprAttr> shape, Type elementType) {
  if (!isa<IntegerType, FloatType>(elementType))
    return emitError() << "element type must be an integer or float type, got "
                       << elementType;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (!d)
      return emitError() << "dimension " << i << " is missing";
    std::optional<sym::Rational> c = d.getValue().getConstant();
    if (c && (!c->isInteger() || !(sym::Rational(0) < *c)))
      return emitError() << "dimension " << i << " is " << c->str()
                         << "; constant dimensions must be positive integers";
  }
  return success();
}

Type SymTensorType::parse(AsmParser &parser) {
  SmallVector<sym::Expr> dims;
  Type elementType;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&]() -> ParseResult {
                                       FailureOr<sym::Expr> e =
                                           parseSymExpr(parser);
                                       if (failed(e))
                                         return failure();
                                       dims.push_back(*e);
                                       return success();
                                     }) ||
      parser.parseComma() || parser.parseType(elementType) ||
      parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), toAttrs(parser.getContext(), dims),
                    elementType);
}

void SymTensorType::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getShape(), printer.getStream(), [&](ExprAttr d) {
    printSymExpr(printer, d.getValue());
  });
  printer << "], " << getElementType() << ">";
}
