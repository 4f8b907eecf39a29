//===- StageRepeat.cpp - stage.repeat syntax and verifier -----------------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::stage;

// stage.repeat [reverse] COUNT [step "i"] [carry(%a = %x : T, ...)]
//     [slice(%w = %W : TW, ...)] [-> stack(T1, ...)] [attributes {...}] {...}
ParseResult RepeatOp::parse(OpAsmParser &parser, OperationState &result) {
  MLIRContext *ctx = parser.getContext();
  auto &props = result.getOrAddProperties<Properties>();
  if (succeeded(parser.parseOptionalKeyword("reverse")))
    props.reverse = UnitAttr::get(ctx);
  FailureOr<sym::Expr> count = parseSymExpr(parser);
  if (failed(count))
    return failure();
  props.count = ExprAttr::get(ctx, *count);
  if (succeeded(parser.parseOptionalKeyword("step"))) {
    std::string step;
    if (parser.parseString(&step))
      return failure();
    props.step = StringAttr::get(ctx, step);
  }

  SmallVector<OpAsmParser::Argument> args;
  SmallVector<OpAsmParser::UnresolvedOperand> inits, slices;
  SmallVector<Type> initTypes, sliceTypes, resultTypes;
  auto parseBindings = [&](StringRef keyword,
                           SmallVectorImpl<OpAsmParser::UnresolvedOperand> &ops,
                           SmallVectorImpl<Type> &types,
                           bool sliced) -> ParseResult {
    if (failed(parser.parseOptionalKeyword(keyword)))
      return success();
    return parser.parseCommaSeparatedList(
        OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
          OpAsmParser::Argument arg;
          OpAsmParser::UnresolvedOperand operand;
          Type type;
          SMLoc loc = parser.getCurrentLocation();
          if (parser.parseArgument(arg) || parser.parseEqual() ||
              parser.parseOperand(operand) || parser.parseColonType(type))
            return failure();
          auto t = dyn_cast<SymTensorType>(type);
          if (!t)
            return parser.emitError(loc, "expected a !stage.tensor type");
          if (sliced && t.getRank() == 0)
            return parser.emitError(loc, "a slice operand needs a leading "
                                         "dimension");
          arg.type = sliced ? t.dropLeadingDim() : t;
          args.push_back(arg);
          ops.push_back(operand);
          types.push_back(t);
          return success();
        });
  };
  if (parseBindings("carry", inits, initTypes, false) ||
      parseBindings("slice", slices, sliceTypes, true))
    return failure();
  // Carried args come first in the block; parseBindings appended them in
  // source order, and `carry` precedes `slice` in the syntax.
  resultTypes.append(initTypes.begin(), initTypes.end());
  if (succeeded(parser.parseOptionalArrow())) {
    if (parser.parseKeyword("stack") ||
        parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren,
                                       [&]() -> ParseResult {
                                         Type t;
                                         if (parser.parseType(t))
                                           return failure();
                                         resultTypes.push_back(t);
                                         return success();
                                       }))
      return failure();
  }
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  if (parser.resolveOperands(inits, initTypes, parser.getNameLoc(),
                             result.operands) ||
      parser.resolveOperands(slices, sliceTypes, parser.getNameLoc(),
                             result.operands))
    return failure();
  props.operandSegmentSizes = {int32_t(inits.size()), int32_t(slices.size())};
  result.addTypes(resultTypes);
  Region *body = result.addRegion();
  return parser.parseRegion(*body, args);
}

void RepeatOp::print(OpAsmPrinter &p) {
  if (getReverse())
    p << " reverse";
  p << " ";
  printSymExpr(p, getCount().getValue());
  if (std::optional<StringRef> step = getStep())
    p << " step \"" << *step << "\"";
  auto printBindings = [&](StringRef keyword, Block::BlockArgListType args,
                           OperandRange operands) {
    if (operands.empty())
      return;
    p << " " << keyword << "(";
    llvm::interleaveComma(llvm::zip(args, operands), p, [&](auto pair) {
      p << std::get<0>(pair) << " = " << std::get<1>(pair) << " : "
        << std::get<1>(pair).getType();
    });
    p << ")";
  };
  printBindings("carry", getCarriedArgs(), getInits());
  printBindings("slice", getSliceArgs(), getSlices());
  if (!getStackedResults().empty()) {
    p << " -> stack(";
    llvm::interleaveComma(getStackedResults().getTypes(), p);
    p << ")";
  }
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {"count", "reverse", "step", "operandSegmentSizes"});
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false);
}

LogicalResult RepeatOp::verifyRegions() {
  Block &body = getBodyBlock();
  unsigned nCarry = getNumCarried();
  if (body.getNumArguments() != nCarry + getSlices().size())
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments; expected "
           << nCarry + getSlices().size() << " (carried, then slices)";
  for (auto [i, init, arg] : llvm::enumerate(getInits(), getCarriedArgs()))
    if (init.getType() != arg.getType())
      return emitOpError("carried argument ") << i << " has the wrong type";
  sym::Expr count = getCount().getValue();
  for (auto [i, slice, arg] : llvm::enumerate(getSlices(), getSliceArgs())) {
    auto t = cast<SymTensorType>(slice.getType());
    if (t.getRank() == 0 || t.getDim(0) != count)
      return emitOpError("slice operand ")
             << i << " must have the count " << count.str()
             << " as its leading dimension, got " << t;
    if (arg.getType() != t.dropLeadingDim())
      return emitOpError("slice argument ") << i << " has the wrong type";
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with stage.yield");
  if (yield.getValues().size() < nCarry)
    return emitOpError("yields ")
           << yield.getValues().size() << " values but carries " << nCarry;
  unsigned nStacked = yield.getValues().size() - nCarry;
  if (getNumResults() != nCarry + nStacked)
    return emitOpError("has ")
           << getNumResults() << " results; expected " << nCarry
           << " carried and " << nStacked << " stacked";
  for (unsigned i = 0; i < nCarry; ++i)
    if (yield.getValues()[i].getType() != getInits()[i].getType() ||
        getResult(i).getType() != getInits()[i].getType())
      return emitOpError("carried value ")
             << i << " changes type across iterations";
  for (unsigned j = 0; j < nStacked; ++j) {
    auto y = cast<SymTensorType>(yield.getValues()[nCarry + j].getType());
    if (getResult(nCarry + j).getType() != y.stacked(count))
      return emitOpError("stacked result ")
             << j << " must have type " << y.stacked(count);
  }
  if (std::optional<StringRef> step = getStep()) {
    // The step's index exists only inside the body.
    if (step->empty() || count.symbols().count(step->str()))
      return emitOpError("step symbol '")
             << *step << "' must be a new name, not used by the count";
    auto mentions = [&](Type t) {
      for (const sym::Expr &d : cast<SymTensorType>(t).getDims())
        if (d.symbols().count(step->str()))
          return true;
      return false;
    };
    for (Value v : getOperands())
      if (mentions(v.getType()))
        return emitOpError("operand type ")
               << v.getType() << " uses the step symbol '" << *step
               << "', which exists only inside the body";
    for (Value v : getResults())
      if (mentions(v.getType()))
        return emitOpError("result type ")
               << v.getType() << " uses the step symbol '" << *step
               << "', which exists only inside the body";
  }
  return success();
}
