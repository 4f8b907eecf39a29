//===- StageTraining.cpp - Verifiers and syntax of training-step ops ------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::stage;

static bool sameShape(Value a, Value b) {
  return getTensorType(a).getDims() == getTensorType(b).getDims();
}

LogicalResult DropoutOp::verify() {
  if (!sameShape(getInput(), getResult()) || !sameShape(getInput(), getMask()))
    return emitOpError("output and mask must have the operand's shape");
  if (getResult().getType() != getInput().getType())
    return emitOpError("output must have the operand's type");
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  if (getOutput().getType() != getGrad().getType() ||
      getResult().getType() != getGrad().getType())
    return emitOpError("output, gradient and result must have one type");
  if (getDim() >= getOutput().getType().getRank())
    return emitOpError("dim ") << int64_t(getDim()) << " is out of range";
  return success();
}

LogicalResult NormGradOp::verify() {
  if (!sameShape(getInput(), getGrad()) || !sameShape(getInput(), getInputGrad()))
    return emitOpError("input, gradient and input gradient must have one shape");
  bool hasWeight = bool(getWeight());
  size_t expected = (hasWeight ? 1 : 0) + (getWithBias() ? 1 : 0);
  if (getParamGrads().size() != expected)
    return emitOpError("produces ")
           << getParamGrads().size() << " parameter gradients; expected "
           << expected << " (weight, then bias with 'with_bias')";
  if (getWithBias() && getKind() == NormKind::rms)
    return emitOpError("rms normalization has no bias");
  if (hasWeight && getWeight().getType() != getWeightGrad().getType())
    return emitOpError("the weight gradient must have the weight's type");
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  SymTensorType dy = getGrad().getType(), ids = getIds().getType(),
                out = getResult().getType();
  if (out.getRank() != 2 || dy.getRank() != ids.getRank() + 1 ||
      dy.getDim(dy.getRank() - 1) != out.getDim(1))
    return emitOpError("expects a gradient [..., D], ids [...] and a table "
                       "gradient [V, D]");
  for (unsigned d = 0; d < ids.getRank(); ++d)
    if (ids.getDim(d) != dy.getDim(d))
      return emitOpError("ids and gradient differ in dimension ") << d;
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  if (!sameShape(getLogits(), getResult()))
    return emitOpError("the gradient must have the logits' shape");
  SymTensorType l = getLogits().getType(), t = getLabels().getType();
  if (t.getRank() + 1 != l.getRank())
    return emitOpError("labels must have one dimension fewer than the logits");
  return success();
}

LogicalResult AttentionGradOp::verify() {
  if (!sameShape(getQuery(), getQueryGrad()) ||
      !sameShape(getKey(), getKeyGrad()) ||
      !sameShape(getValue(), getValueGrad()))
    return emitOpError("each gradient must have its input's shape");
  if (!sameShape(getOutput(), getGrad()))
    return emitOpError("the output gradient must have the output's shape");
  return verifyAttentionWindow(*this, getWindowAttr());
}

LogicalResult TopKGradOp::verify() {
  SymTensorType dw = getGrad().getType(), out = getResult().getType();
  if (!sameShape(getGrad(), getIndices()) || dw.getRank() != out.getRank())
    return emitOpError("expects weight gradients and indices of one shape and "
                       "a score gradient of the same rank");
  for (unsigned d = 0; d + 1 < dw.getRank(); ++d)
    if (dw.getDim(d) != out.getDim(d))
      return emitOpError("differs from the scores in dimension ") << d;
  return success();
}

LogicalResult DispatchGradOp::verify() {
  SymTensorType buf = getGrad().getType(), ids = getIndices().getType(),
                out = getResult().getType();
  if (buf.getRank() != 3 || out.getRank() != ids.getRank() ||
      out.getDim(out.getRank() - 1) != buf.getDim(2))
    return emitOpError("expects a buffer gradient [E, C, D] and a token "
                       "gradient [..., D] of the indices' rank");
  return success();
}

LogicalResult CombineGradOp::verify() {
  if (!sameShape(getExpertOutputs(), getExpertGrad()))
    return emitOpError("the expert gradient must have the expert outputs' shape");
  if (!sameShape(getWeights(), getWeightGrad()))
    return emitOpError("the weight gradient must have the weights' shape");
  return success();
}

LogicalResult PadOp::verify() {
  SymTensorType in = getInput().getType(), out = getResult().getType();
  if (getDim() >= in.getRank())
    return emitOpError("dim ") << int64_t(getDim()) << " is out of range";
  SmallVector<sym::Expr> expected = in.getDims();
  expected[getDim()] = getSize().getValue();
  if (out.getDims() != expected)
    return emitOpError("result shape must be the operand's with dimension ")
           << int64_t(getDim()) << " of size " << getSize().getValue().str();
  return success();
}

//===----------------------------------------------------------------------===//
// MicrobatchesOp
//===----------------------------------------------------------------------===//

OperandRange MicrobatchesOp::getSavedValues() {
  return getForwardBlock().getTerminator()->getOperands();
}

// stage.microbatches COUNT [-> (T, ...)] [attributes {...}]
//     forward {...} backward {^bb0(...): ...}
ParseResult MicrobatchesOp::parse(OpAsmParser &parser, OperationState &result) {
  FailureOr<sym::Expr> count = parseSymExpr(parser);
  if (failed(count))
    return failure();
  result.getOrAddProperties<Properties>().count =
      ExprAttr::get(parser.getContext(), *count);
  SmallVector<Type> types;
  if (succeeded(parser.parseOptionalArrow()) &&
      parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren,
                                     [&]() -> ParseResult {
                                       Type t;
                                       if (parser.parseType(t))
                                         return failure();
                                       types.push_back(t);
                                       return success();
                                     }))
    return failure();
  result.addTypes(types);
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *fwd = result.addRegion(), *bwd = result.addRegion();
  if (parser.parseKeyword("forward") || parser.parseRegion(*fwd) ||
      parser.parseKeyword("backward") || parser.parseRegion(*bwd))
    return failure();
  return success();
}

void MicrobatchesOp::print(OpAsmPrinter &p) {
  p << " ";
  printSymExpr(p, getCount().getValue());
  if (getNumResults()) {
    p << " -> (";
    llvm::interleaveComma(getResultTypes(), p);
    p << ")";
  }
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(), {"count"});
  p << " forward ";
  p.printRegion(getForward(), /*printEntryBlockArgs=*/false);
  p << " backward ";
  p.printRegion(getBackward(), /*printEntryBlockArgs=*/true);
}

LogicalResult MicrobatchesOp::verifyRegions() {
  if (getForwardBlock().getNumArguments() != 0)
    return emitOpError("the forward region takes no arguments");
  auto fy = dyn_cast<YieldOp>(getForwardBlock().getTerminator());
  auto by = dyn_cast<YieldOp>(getBackwardBlock().getTerminator());
  if (!fy || !by)
    return emitOpError("both regions must end with stage.yield");
  Block &bwd = getBackwardBlock();
  if (bwd.getNumArguments() != fy.getValues().size())
    return emitOpError("the backward region takes ")
           << bwd.getNumArguments() << " arguments but the forward keeps "
           << fy.getValues().size() << " values";
  for (auto [i, kept, arg] : llvm::enumerate(fy.getValues(), bwd.getArguments()))
    if (kept.getType() != arg.getType())
      return emitOpError("kept value ")
             << i << " has type " << kept.getType()
             << " but the backward argument has " << arg.getType();
  if (by.getValues().getTypes() != getResultTypes())
    return emitOpError("results must have the types of the backward yield");
  return success();
}

//===----------------------------------------------------------------------===//
// OptimizerStepOp
//===----------------------------------------------------------------------===//

int64_t OptimizerStepOp::getFlopsPerElement() {
  // sgd: w -= lr * g. adam: both moment updates (3 + 4), bias corrections
  // (2), m / (sqrt(v) + eps) (3), w -= lr * update (2); adamw adds the decay
  // (2). The master copy adds the cast back to the weight type.
  int64_t n = getKind() == OptimizerKind::sgd    ? 2
              : getKind() == OptimizerKind::adam ? 14
                                                 : 16;
  return n + (getMaster() ? 1 : 0);
}

LogicalResult OptimizerStepOp::verify() {
  auto shape = [](Value v) { return getTensorType(v).getDims(); };
  if (shape(getGrad()) != shape(getWeight()))
    return emitOpError("the gradient must have the weight's shape");
  for (Value v : {getMaster(), getExpAvg(), getExpAvgSq()})
    if (v && shape(v) != shape(getWeight()))
      return emitOpError("optimizer states must have the weight's shape");
  bool moments = bool(getExpAvg());
  if (moments != (getKind() != OptimizerKind::sgd))
    return emitOpError(getKind() == OptimizerKind::sgd
                           ? "sgd keeps no moments"
                           : "adam and adamw need both moments");
  return success();
}

//===----------------------------------------------------------------------===//
// PipelineOp
//===----------------------------------------------------------------------===//

int64_t mlir::stage::getPhysicalStage(ScheduleKind kind, int64_t pp,
                                      int64_t chunk) {
  if (isVShaped(kind) && chunk >= pp)
    return 2 * pp - 1 - chunk;
  return chunk % pp;
}

bool mlir::stage::isVShaped(ScheduleKind kind) {
  return kind == ScheduleKind::zb_v || kind == ScheduleKind::dualpipe_v ||
         isMirrored(kind);
}

bool mlir::stage::isMirrored(ScheduleKind kind) {
  return kind == ScheduleKind::dualpipe;
}

bool mlir::stage::splitsBackward(ScheduleKind kind) {
  return kind == ScheduleKind::zb_h1 || isVShaped(kind);
}

SmallVector<PipelineStageOp> mlir::stage::getPipelineStages(PipelineOp op) {
  return llvm::to_vector(op.getBody().front().getOps<PipelineStageOp>());
}

int64_t PipelineOp::getNumPhysicalStages() {
  int64_t v = std::max<int64_t>(int64_t(getVirtualStages()), 1);
  return int64_t(getPipelineStages(*this).size()) / v;
}

int64_t PipelineOp::getPhysicalStage(int64_t chunk) {
  return mlir::stage::getPhysicalStage(getSchedule(), getNumPhysicalStages(),
                                       chunk);
}

LogicalResult PipelineOp::verifyRegions() {
  SmallVector<PipelineStageOp> stages = getPipelineStages(*this);
  if (stages.empty())
    return emitOpError("needs at least one stage");
  for (Operation &op : getBody().front())
    if (!isa<PipelineStageOp>(op))
      return emitOpError("holds only stage.pipeline_stage ops");
  for (auto [i, s] : llvm::enumerate(stages))
    if (s.getIndex() != i)
      return s.emitOpError("has index ")
             << int64_t(s.getIndex()) << " but is stage " << i;
  int64_t v = getVirtualStages();
  if (v < 1 || stages.size() % v != 0)
    return emitOpError("has ") << stages.size()
                               << " stages, not a multiple of "
                               << v << " virtual stages";
  if (isVShaped(getSchedule()) && v != 2)
    return emitOpError("the ")
           << stringifyScheduleKind(getSchedule())
           << " schedule runs 2 virtual stages per rank, not " << v;
  if (getSchedule() != ScheduleKind::interleaved && !isVShaped(getSchedule()) &&
      v != 1)
    return emitOpError("only the interleaved schedule has virtual stages");
  // The stages (DualPipe's first copy) hold consecutive ranges of the
  // model's layers from the first: a range that starts elsewhere, skips or
  // repeats layers would misplace every layer after it (in the KV handoff,
  // in the report's layer ranges).
  size_t distinct =
      isMirrored(getSchedule()) ? stages.size() / 2 : stages.size();
  int64_t next = 0;
  for (PipelineStageOp s : ArrayRef(stages).take_front(distinct)) {
    if (s.getLayers()[0] != next)
      return s.emitOpError("layers [")
             << s.getLayers()[0] << ", " << s.getLayers()[1]
             << "] must start at layer " << next
             << ", where the stage before it ends (the stages hold "
                "consecutive layers from 0)";
    next = s.getLayers()[1];
  }
  if (std::optional<int64_t> n = getNumLayers(); n && next != *n)
    return emitOpError("has ")
           << *n << " layers but its stages hold layers up to " << next
           << " (the stages hold the layers [0, " << *n << ") in order)";
  if (isMirrored(getSchedule())) {
    int64_t pp = int64_t(stages.size()) / 2;
    if (pp % 2 != 0)
      return emitOpError("the ")
             << stringifyScheduleKind(getSchedule())
             << " schedule needs an even number of ranks, not " << pp;
    for (int64_t j = 0; j < pp; ++j)
      if (stages[pp + j].getLayers() != stages[j].getLayers())
        return stages[pp + j].emitOpError("is the mirrored copy of stage ")
               << j << " and must hold its layers";
  }
  return success();
}

LogicalResult PipelineStageOp::verify() {
  if (getLayers().size() != 2 || getLayers()[0] < 0 ||
      getLayers()[0] > getLayers()[1])
    return emitOpError("layers must be a range [begin, end] with 0 <= begin "
                       "<= end");
  return success();
}
