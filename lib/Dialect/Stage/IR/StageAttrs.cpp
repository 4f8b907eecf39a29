//===- StageAttrs.cpp - Attributes of the stage dialect -------------------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"
#include "Stage/Support/ExprConstants.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::stage;

#define GET_ATTRDEF_CLASSES
#include "Stage/Dialect/Stage/IR/StageOpsAttrs.cpp.inc"

void StageDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Stage/Dialect/Stage/IR/StageOpsAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Symbolic expressions in the MLIR syntax
//===----------------------------------------------------------------------===//

namespace {
/// Feeds the expression grammar from the MLIR lexer. `^` has no MLIR token,
/// so powers print as repeated factors (`S*S`).
class AsmExprLexer {
public:
  explicit AsmExprLexer(AsmParser &p) : p(p) {}

  bool punct(char c) {
    if (failed)
      return false;
    switch (c) {
    case '+':
      return succeeded(p.parseOptionalPlus());
    case '-':
      return succeeded(p.parseOptionalMinus());
    case '*':
      return succeeded(p.parseOptionalStar());
    case '/':
      return succeeded(p.parseOptionalSlash());
    case '(':
      return succeeded(p.parseOptionalLParen());
    case ')':
      return succeeded(p.parseOptionalRParen());
    default:
      return false;
    }
  }
  bool identifier(std::string &out) {
    StringRef kw;
    if (failed || mlir::failed(p.parseOptionalKeyword(&kw)))
      return false;
    out = kw.str();
    return true;
  }
  bool integer(int64_t &out) {
    if (failed)
      return false;
    uint64_t v = 0;
    OptionalParseResult r = p.parseOptionalInteger(v);
    if (!r.has_value())
      return false;
    if (mlir::failed(*r) || v > uint64_t(INT64_MAX)) {
      failed = true;
      return false;
    }
    out = int64_t(v);
    return true;
  }
  bool fail(const std::string &msg) {
    if (!failed)
      p.emitError(p.getCurrentLocation(), "invalid expression: ") << msg;
    failed = true;
    return false;
  }

private:
  AsmParser &p;
  bool failed = false;
};
} // namespace

FailureOr<sym::Expr> mlir::stage::parseSymExpr(AsmParser &parser) {
  AsmExprLexer lex(parser);
  sym::ExprGrammar<AsmExprLexer> grammar(lex);
  sym::Expr e;
  if (!grammar.parseExpr(e))
    return failure();
  // MLIR has no `^` token (it starts a block name), so a power would end
  // the expression and the caller would report the token it expected.
  if (*parser.getCurrentLocation().getPointer() == '^') {
    lex.fail("'^' is not an operator in the IR: a power is written as a "
             "product (S*S)");
    return failure();
  }
  if (std::optional<std::string> why = sym::getUnprintableConstant(e)) {
    lex.fail(*why);
    return failure();
  }
  return e;
}

void mlir::stage::printSymExpr(AsmPrinter &printer, const sym::Expr &e) {
  printer.getStream() << e.str();
}

ParseResult mlir::stage::parseSymExpr(OpAsmParser &parser, ExprAttr &attr) {
  FailureOr<sym::Expr> e = parseSymExpr(static_cast<AsmParser &>(parser));
  if (failed(e))
    return failure();
  attr = ExprAttr::get(parser.getContext(), *e);
  return success();
}

void mlir::stage::printSymExpr(OpAsmPrinter &printer, Operation *,
                               ExprAttr attr) {
  printSymExpr(printer, attr.getValue());
}

static ParseResult parseAxisNames(AsmParser &parser,
                                  SmallVectorImpl<std::string> &names) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        StringRef kw;
        if (parser.parseKeyword(&kw))
          return failure();
        names.push_back(kw.str());
        return success();
      });
}

static void printAxisNames(AsmPrinter &printer, ArrayAttr axes) {
  printer.getStream() << "[";
  llvm::interleaveComma(axes, printer.getStream(), [&](Attribute a) {
    printer.getStream() << cast<StringAttr>(a).getValue();
  });
  printer.getStream() << "]";
}

ParseResult mlir::stage::parseAxisList(OpAsmParser &parser, ArrayAttr &axes) {
  SmallVector<std::string> names;
  if (parseAxisNames(parser, names))
    return failure();
  SmallVector<Attribute> attrs;
  for (const std::string &n : names)
    attrs.push_back(StringAttr::get(parser.getContext(), n));
  axes = ArrayAttr::get(parser.getContext(), attrs);
  return success();
}

void mlir::stage::printAxisList(OpAsmPrinter &printer, Operation *,
                                ArrayAttr axes) {
  printAxisNames(printer, axes);
}

//===----------------------------------------------------------------------===//
// ExprAttr
//===----------------------------------------------------------------------===//

Attribute ExprAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  FailureOr<sym::Expr> e = parseSymExpr(parser);
  if (failed(e) || parser.parseGreater())
    return {};
  return ExprAttr::get(parser.getContext(), *e);
}

void ExprAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printSymExpr(printer, getValue());
  printer << ">";
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

static ArrayAttr toAxisArray(MLIRContext *ctx, ArrayRef<std::string> names) {
  SmallVector<Attribute> attrs;
  for (const std::string &n : names)
    attrs.push_back(StringAttr::get(ctx, n));
  return ArrayAttr::get(ctx, attrs);
}

static SmallVector<std::string> fromAxisArray(ArrayAttr axes) {
  SmallVector<std::string> names;
  for (Attribute a : axes)
    names.push_back(cast<StringAttr>(a).getValue().str());
  return names;
}

ShardingAttr ShardingAttr::getReplicated(MLIRContext *ctx, unsigned rank) {
  SmallVector<SmallVector<std::string>> dims(rank);
  return get(ctx, dims, {});
}

ShardingAttr ShardingAttr::get(MLIRContext *ctx,
                               ArrayRef<SmallVector<std::string>> dims,
                               ArrayRef<std::string> partial) {
  SmallVector<ArrayAttr> dimAttrs;
  for (const auto &d : dims)
    dimAttrs.push_back(toAxisArray(ctx, d));
  return Base::get(ctx, dimAttrs, toAxisArray(ctx, partial));
}

SmallVector<std::string> ShardingAttr::getDimAxes(unsigned dim) const {
  return fromAxisArray(getDims()[dim]);
}

SmallVector<std::string> ShardingAttr::getPartialAxes() const {
  return fromAxisArray(getPartial());
}

SmallVector<std::string> ShardingAttr::getSplitAxes() const {
  SmallVector<std::string> all;
  for (ArrayAttr d : getDims())
    llvm::append_range(all, fromAxisArray(d));
  return all;
}

bool ShardingAttr::isReplicated() const {
  return !isPartial() &&
         llvm::all_of(getDims(), [](ArrayAttr d) { return d.empty(); });
}

std::optional<unsigned> ShardingAttr::getDimOfAxis(StringRef axis) const {
  for (auto [i, d] : llvm::enumerate(getDims()))
    for (Attribute a : d)
      if (cast<StringAttr>(a).getValue() == axis)
        return unsigned(i);
  return std::nullopt;
}

sym::Expr ShardingAttr::getSplitFactor(unsigned dim) const {
  sym::Expr f(1);
  for (Attribute a : getDims()[dim])
    f *= sym::Expr::symbol(cast<StringAttr>(a).getValue().str());
  return f;
}

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     ArrayRef<ArrayAttr> dims, ArrayAttr partial) {
  llvm::StringSet<> seen;
  auto check = [&](ArrayAttr axes) -> LogicalResult {
    for (Attribute a : axes) {
      auto s = dyn_cast<StringAttr>(a);
      if (!s || s.getValue().empty())
        return emitError() << "sharding axes must be non-empty names";
      if (!seen.insert(s.getValue()).second)
        return emitError() << "axis '" << s.getValue()
                           << "' appears more than once in the sharding";
    }
    return success();
  };
  for (ArrayAttr d : dims)
    if (failed(check(d)))
      return failure();
  return check(partial);
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  SmallVector<SmallVector<std::string>> dims;
  SmallVector<std::string> partial;
  if (parser.parseLess())
    return {};
  if (parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square, [&]() -> ParseResult {
            dims.emplace_back();
            return parseAxisNames(parser, dims.back());
          }))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        parseAxisNames(parser, partial))
      return {};
  }
  if (parser.parseGreater())
    return {};
  SmallVector<ArrayAttr> dimAttrs;
  for (const auto &d : dims)
    dimAttrs.push_back(toAxisArray(parser.getContext(), d));
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), dimAttrs,
                    toAxisArray(parser.getContext(), partial));
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getDims(), printer.getStream(),
                        [&](ArrayAttr d) { printAxisNames(printer, d); });
  printer << "]";
  if (isPartial()) {
    printer << ", partial = ";
    printAxisNames(printer, getPartial());
  }
  printer << ">";
}
