//===- StageOps.cpp - Verifiers of the compute ops ------------------------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <set>

using namespace mlir;
using namespace mlir::stage;

/// `[B, S, D]` for diagnostics.
static std::string shapeStr(SymTensorType t) {
  std::string s = "[";
  for (unsigned i = 0; i < t.getRank(); ++i)
    s += (i ? ", " : "") + t.getDim(i).str();
  return s + "]";
}

/// Dimension attributes are I64Attr, read back as uint64_t: a negative value
/// in the IR wraps around and fails the bound check.
static bool isDimInRange(uint64_t dim, unsigned rank) { return dim < rank; }

static bool isIntegerTensor(SymTensorType t) {
  return isa<IntegerType>(t.getElementType());
}

//===----------------------------------------------------------------------===//
// GridOp, ParamOp
//===----------------------------------------------------------------------===//

SmallVector<std::string> GridOp::getAxisNames() {
  SmallVector<std::string> names;
  for (Attribute a : getAxes())
    names.push_back(cast<StringAttr>(a).getValue().str());
  return names;
}

bool GridOp::hasAxis(StringRef name) {
  return llvm::any_of(getAxes(), [&](Attribute a) {
    return cast<StringAttr>(a).getValue() == name;
  });
}

LogicalResult GridOp::verify() {
  if (getAxes().empty())
    return emitOpError("needs at least one axis");
  llvm::StringSet<> seen;
  for (Attribute a : getAxes()) {
    StringRef name = cast<StringAttr>(a).getValue();
    bool valid = !name.empty() && (isalpha(name[0]) || name[0] == '_') &&
                 llvm::all_of(name, [](char c) {
                   return isalnum(c) || c == '_';
                 });
    if (!valid)
      return emitOpError("axis name '")
             << name << "' is not an identifier (it is also the axis size symbol)";
    if (!seen.insert(name).second)
      return emitOpError("axis '") << name << "' is declared twice";
  }
  return success();
}

/// `kind "exp_avg"`, or nothing for a weight.
static ParseResult parseParamKind(OpAsmParser &parser, ParamKindAttr &kind) {
  MLIRContext *ctx = parser.getContext();
  kind = ParamKindAttr::get(ctx, ParamKind::weight);
  if (failed(parser.parseOptionalKeyword("kind")))
    return success();
  SMLoc loc = parser.getCurrentLocation();
  std::string text;
  if (parser.parseString(&text))
    return failure();
  std::optional<ParamKind> k = symbolizeParamKind(text);
  if (!k)
    return parser.emitError(loc, "unknown kind '")
           << text
           << "'; expected weight, master, exp_avg, exp_avg_sq, grad or "
              "buffer";
  kind = ParamKindAttr::get(ctx, *k);
  return success();
}

static void printParamKind(OpAsmPrinter &p, ParamOp, ParamKindAttr kind) {
  if (kind.getValue() != ParamKind::weight)
    p << " kind \"" << stringifyParamKind(kind.getValue()) << "\"";
}

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty name");
  static const char *const groups[] = {"embedding", "attention", "ssm",   "mlp",
                                       "norm",      "router",    "expert"};
  if (getGroup() && !llvm::is_contained(groups, *getGroup()))
    return emitOpError("unknown group '")
           << *getGroup()
           << "'; expected embedding, attention, ssm, mlp, norm, router or "
              "expert";
  return success();
}

//===----------------------------------------------------------------------===//
// EinsumOp
//===----------------------------------------------------------------------===//

namespace {
struct EinsumSpec {
  SmallVector<std::string> inputs;
  std::string result;
};
} // namespace

static FailureOr<EinsumSpec> parseEinsumSpec(StringRef spec,
                                             std::string &error) {
  size_t arrow = spec.find("->");
  if (arrow == StringRef::npos || spec.find("->", arrow + 2) != StringRef::npos) {
    error = "spec '" + spec.str() + "' must contain exactly one '->'";
    return failure();
  }
  EinsumSpec s;
  SmallVector<StringRef> terms;
  spec.take_front(arrow).split(terms, ',');
  for (StringRef t : terms)
    s.inputs.push_back(t.trim().str());
  s.result = spec.drop_front(arrow + 2).trim().str();
  auto check = [&](const std::string &term) {
    std::set<char> seen;
    for (char c : term) {
      if (!isalpha(c)) {
        error = "spec '" + spec.str() + "' has '" + std::string(1, c) +
                "'; indices are letters";
        return false;
      }
      if (!seen.insert(c).second) {
        error = "index '" + std::string(1, c) + "' repeats within the term '" +
                term + "' of spec '" + spec.str() + "'";
        return false;
      }
    }
    return true;
  };
  for (const std::string &t : s.inputs)
    if (!check(t))
      return failure();
  if (!check(s.result))
    return failure();
  return s;
}

SmallVector<std::string> EinsumOp::getInputIndices() {
  std::string err;
  return parseEinsumSpec(getSpec(), err)->inputs;
}

std::string EinsumOp::getResultIndices() {
  std::string err;
  return parseEinsumSpec(getSpec(), err)->result;
}

std::map<char, sym::Expr> EinsumOp::getIndexExtents() {
  std::map<char, sym::Expr> extents;
  for (auto [term, v] : llvm::zip(getInputIndices(), getInputs()))
    for (auto [i, c] : llvm::enumerate(term))
      extents.emplace(c, getTensorType(v).getDim(i));
  return extents;
}

std::string EinsumOp::getContractedIndices() {
  std::string res = getResultIndices(), out;
  for (auto &[c, e] : getIndexExtents())
    if (res.find(c) == std::string::npos)
      out.push_back(c);
  return out;
}

LogicalResult EinsumOp::verify() {
  std::string err;
  FailureOr<EinsumSpec> spec = parseEinsumSpec(getSpec(), err);
  if (failed(spec))
    return emitOpError(err);
  if (spec->inputs.size() != getInputs().size())
    return emitOpError("spec '")
           << getSpec() << "' has " << spec->inputs.size()
           << " input terms but the op has " << getInputs().size()
           << " operands";
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  std::map<char, std::pair<sym::Expr, unsigned>> extents;
  for (auto [n, term, v] :
       llvm::enumerate(spec->inputs, getInputs())) {
    SymTensorType t = getTensorType(v);
    if (term.size() != t.getRank())
      return emitOpError("operand ")
             << n << " has rank " << t.getRank() << " but its term '" << term
             << "' has " << term.size() << " indices";
    for (auto [i, c] : llvm::enumerate(term)) {
      auto [it, inserted] = extents.emplace(c, std::make_pair(t.getDim(i), n));
      if (!inserted && it->second.first != t.getDim(i))
        return emitOpError("index '")
               << c << "' has extent " << it->second.first.str()
               << " in operand " << it->second.second << " but "
               << t.getDim(i).str() << " in operand " << n;
    }
  }
  SymTensorType rt = getResult().getType();
  if (spec->result.size() != rt.getRank())
    return emitOpError("result has rank ")
           << rt.getRank() << " but its term '" << spec->result << "' has "
           << spec->result.size() << " indices";
  for (auto [i, c] : llvm::enumerate(spec->result)) {
    auto it = extents.find(c);
    if (it == extents.end())
      return emitOpError("result index '")
             << c << "' appears in no operand of spec '" << getSpec() << "'";
    if (it->second.first != rt.getDim(i))
      return emitOpError("result dimension ")
             << i << " (index '" << c << "') is " << rt.getDim(i).str()
             << " but the operands give " << it->second.first.str();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// EwiseOp
//===----------------------------------------------------------------------===//

int EwiseOp::getArity(EwiseKind kind) {
  switch (kind) {
  case EwiseKind::add:
  case EwiseKind::sub:
  case EwiseKind::mul:
  case EwiseKind::div:
  case EwiseKind::max:
  case EwiseKind::min:
    return 2;
  case EwiseKind::select:
    return 3;
  case EwiseKind::silu_grad:
  case EwiseKind::gelu_grad:
  case EwiseKind::sigmoid_grad:
  case EwiseKind::tanh_grad:
  case EwiseKind::relu_grad:
    return 2;
  case EwiseKind::generic:
    return -1;
  default:
    return 1;
  }
}

int64_t EwiseOp::getFlopsPerElement(EwiseKind kind) {
  switch (kind) {
  case EwiseKind::copy:
  case EwiseKind::cast:
    return 0;
  case EwiseKind::sigmoid: // 1 / (1 + exp(-x))
    return 4;
  case EwiseKind::silu: // x * sigmoid(x)
    return 5;
  case EwiseKind::gelu: // 0.5x(1 + tanh(c(x + 0.044715x^3)))
    return 8;
  case EwiseKind::silu_grad: // dy * s * (1 + x * (1 - s)), s = sigmoid(x)
    return 8;
  case EwiseKind::gelu_grad: // the tanh form and its derivative
    return 12;
  case EwiseKind::sigmoid_grad: // dy * y * (1 - y)
  case EwiseKind::tanh_grad:    // dy * (1 - y * y)
    return 3;
  default:
    return 1;
  }
}

LogicalResult EwiseOp::verify() {
  int arity = getArity(getKind());
  size_t n = getInputs().size();
  if (n == 0 || (arity >= 0 && size_t(arity) != n))
    return emitOpError("'")
           << stringifyEwiseKind(getKind()) << "' takes "
           << (arity < 0 ? std::string("at least one")
                         : std::to_string(arity))
           << " operand(s), got " << n;
  SymTensorType rt = getResult().getType();
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    SymTensorType t = getTensorType(v);
    bool suffix = t.getRank() <= rt.getRank();
    for (unsigned d = 0; suffix && d < t.getRank(); ++d)
      suffix = t.getDim(d) == rt.getDim(rt.getRank() - t.getRank() + d);
    if (!suffix)
      return emitOpError("operand ")
             << i << " has shape " << shapeStr(t)
             << ", which is not a trailing part of the result shape "
             << shapeStr(rt);
    bool typeFree = getKind() == EwiseKind::cast ||
                    getKind() == EwiseKind::generic ||
                    (getKind() == EwiseKind::select && i == 0);
    if (!typeFree && t.getElementType() != rt.getElementType())
      return emitOpError("operand ")
             << i << " has element type " << t.getElementType()
             << " but the result has " << rt.getElementType()
             << " (convert with 'cast')";
  }
  if (getFlopsPerElementAttr() && getKind() != EwiseKind::generic)
    return emitOpError("'flops_per_element' is only for 'generic'");
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions, normalizations, lookups
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() {
  SymTensorType in = getInput().getType(), out = getResult().getType();
  SmallVector<sym::Expr> kept;
  int64_t prev = -1;
  for (int64_t d : getDims()) {
    if (d <= prev || d >= int64_t(in.getRank()))
      return emitOpError("dims must be increasing and below the rank ")
             << in.getRank();
    prev = d;
  }
  for (unsigned i = 0; i < in.getRank(); ++i)
    if (!llvm::is_contained(getDims(), int64_t(i)))
      kept.push_back(in.getDim(i));
  if (out.getDims() != kept)
    return emitOpError("result shape ")
           << shapeStr(out) << " should be " << shapeStr(in.withDims(kept));
  return success();
}

LogicalResult SoftmaxOp::verify() {
  if (!isDimInRange(getDim(), getInput().getType().getRank()))
    return emitOpError("dim ") << int64_t(getDim()) << " is out of range";
  return success();
}

LogicalResult NormOp::verify() {
  SymTensorType in = getInput().getType();
  if (in.getRank() == 0)
    return emitOpError("needs an operand of rank at least 1");
  if (getResult().getType().getDims() != in.getDims())
    return emitOpError("result shape must equal the operand shape");
  sym::Expr last = in.getDim(in.getRank() - 1);
  for (Value v : {getWeight(), getBias()}) {
    if (!v)
      continue;
    SymTensorType t = getTensorType(v);
    if (t.getRank() != 1 || t.getDim(0) != last)
      return emitOpError("weight and bias must have shape [")
             << last.str() << "], got " << shapeStr(t);
  }
  if (getBias() && getKind() == NormKind::rms)
    return emitOpError("rms normalization has no bias");
  return success();
}

LogicalResult EmbeddingOp::verify() {
  SymTensorType table = getTable().getType(), ids = getIds().getType(),
                out = getResult().getType();
  if (table.getRank() != 2)
    return emitOpError("table must have rank 2, got ") << shapeStr(table);
  if (!isIntegerTensor(ids))
    return emitOpError("ids must have an integer element type");
  SmallVector<sym::Expr> expected = ids.getDims();
  expected.push_back(table.getDim(1));
  if (out.getDims() != expected)
    return emitOpError("result shape ")
           << shapeStr(out) << " should be " << shapeStr(out.withDims(expected));
  if (out.getElementType() != table.getElementType())
    return emitOpError("result element type must be the table's");
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  SymTensorType logits = getLogits().getType(), labels = getLabels().getType();
  if (logits.getRank() == 0)
    return emitOpError("logits need a class dimension");
  if (!isIntegerTensor(labels))
    return emitOpError("labels must have an integer element type");
  SmallVector<sym::Expr> expected = logits.getDims();
  expected.pop_back();
  if (labels.getDims() != expected)
    return emitOpError("labels shape ")
           << shapeStr(labels) << " should be "
           << shapeStr(labels.withDims(expected));
  if (getResult().getType().getRank() != 0)
    return emitOpError("the loss is a scalar (rank 0)");
  return success();
}

LogicalResult mlir::stage::verifyAttentionWindow(Operation *op,
                                                 ExprAttr window) {
  if (!window)
    return success();
  std::optional<sym::Rational> w = window.getValue().getConstant();
  if (w && (!w->isInteger() || w->isNegative() || w->isZero()))
    return op->emitOpError("window must be a positive number of keys, got ")
           << window.getValue().str();
  return success();
}

LogicalResult AttentionOp::verify() {
  SymTensorType q = getQuery().getType(), k = getKey().getType(),
                v = getValue().getType(), o = getResult().getType();
  for (auto [name, t] : {std::pair<const char *, SymTensorType>{"query", q},
                         {"key", k},
                         {"value", v},
                         {"result", o}})
    if (t.getRank() != 4)
      return emitOpError(name) << " must be [batch, seq, heads, head_dim], got "
                               << shapeStr(t);
  if (k.getDim(0) != q.getDim(0) || v.getDim(0) != q.getDim(0))
    return emitOpError("query, key and value must have the same batch");
  if (k.getDim(1) != v.getDim(1) || k.getDim(2) != v.getDim(2))
    return emitOpError("key ")
           << shapeStr(k) << " and value " << shapeStr(v)
           << " must agree in sequence and heads";
  if (k.getDim(3) != q.getDim(3))
    return emitOpError("query and key head dims differ: ")
           << q.getDim(3).str() << " vs " << k.getDim(3).str();
  SmallVector<sym::Expr> expected = {
      q.getDim(0), q.getDim(1), q.getDim(2),
      getValueWidth() ? getValueWidth()->getValue() : v.getDim(3)};
  if (o.getDims() != expected)
    return emitOpError("result shape ")
           << shapeStr(o) << " should be " << shapeStr(o.withDims(expected));
  return verifyAttentionWindow(*this, getWindowAttr());
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  SymTensorType in = getInput().getType(), out = getResult().getType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("changes the element count from ")
           << in.getNumElements().str() << " to " << out.getNumElements().str();
  if (in.getElementType() != out.getElementType())
    return emitOpError("cannot change the element type");
  return success();
}

LogicalResult TransposeOp::verify() {
  SymTensorType in = getInput().getType(), out = getResult().getType();
  ArrayRef<int64_t> perm = getPermutation();
  if (perm.size() != in.getRank())
    return emitOpError("permutation has ")
           << perm.size() << " entries for rank " << in.getRank();
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<sym::Expr> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(perm.size()) || seen[p])
      return emitOpError("is not a permutation");
    seen[p] = true;
    expected.push_back(in.getDim(p));
  }
  if (out.getDims() != expected)
    return emitOpError("result shape ")
           << shapeStr(out) << " should be " << shapeStr(out.withDims(expected));
  return success();
}

LogicalResult SliceOp::verify() {
  SymTensorType in = getInput().getType(), out = getResult().getType();
  if (!isDimInRange(getDim(), in.getRank()))
    return emitOpError("dim ") << int64_t(getDim()) << " is out of range";
  SmallVector<sym::Expr> expected = in.getDims();
  expected[getDim()] = getSize().getValue();
  if (out.getDims() != expected)
    return emitOpError("result shape ")
           << shapeStr(out) << " should be " << shapeStr(out.withDims(expected));
  // Symbols are positive sizes, so a room with only negative terms is
  // negative under every binding.
  sym::Expr room =
      in.getDim(getDim()) - getOffset().getValue() - getSize().getValue();
  if (!room.isZero() &&
      llvm::all_of(room.terms(),
                   [](const sym::Expr::Term &t) { return t.coef.isNegative(); }))
    return emitOpError("slice exceeds the dimension");
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  SymTensorType first = getTensorType(getInputs()[0]);
  if (!isDimInRange(getDim(), first.getRank()))
    return emitOpError("dim ") << int64_t(getDim()) << " is out of range";
  sym::Expr total;
  for (Value v : getInputs()) {
    SymTensorType t = getTensorType(v);
    if (t.getRank() != first.getRank())
      return emitOpError("operands must have the same rank");
    for (unsigned d = 0; d < t.getRank(); ++d)
      if (int64_t(d) != getDim() && t.getDim(d) != first.getDim(d))
        return emitOpError("operands differ in dimension ") << d;
    total += t.getDim(getDim());
  }
  SmallVector<sym::Expr> expected = first.getDims();
  expected[getDim()] = total;
  SymTensorType out = getResult().getType();
  if (out.getDims() != expected)
    return emitOpError("result shape ")
           << shapeStr(out) << " should be " << shapeStr(out.withDims(expected));
  return success();
}

LogicalResult BroadcastOp::verify() {
  SymTensorType in = getInput().getType(), out = getResult().getType();
  SmallVector<sym::Expr> kept;
  int64_t prev = -1;
  for (int64_t d : getDims()) {
    if (d <= prev || d >= int64_t(out.getRank()))
      return emitOpError("dims must be increasing and below the result rank");
    prev = d;
  }
  for (unsigned i = 0; i < out.getRank(); ++i)
    if (!llvm::is_contained(getDims(), int64_t(i)))
      kept.push_back(out.getDim(i));
  if (in.getDims() != kept)
    return emitOpError("operand shape ")
           << shapeStr(in) << " should be " << shapeStr(in.withDims(kept))
           << " (the result without the new dims)";
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult TopKOp::verify() {
  SymTensorType s = getScores().getType();
  if (s.getRank() == 0)
    return emitOpError("scores need an expert dimension");
  SmallVector<sym::Expr> expected = s.getDims();
  expected.back() = getK().getValue();
  for (Value v : {getWeights(), getIndices()})
    if (getTensorType(v).getDims() != expected)
      return emitOpError("results must have shape ")
             << shapeStr(s.withDims(expected));
  if (!isIntegerTensor(getIndices().getType()))
    return emitOpError("indices must have an integer element type");
  return success();
}

LogicalResult DispatchOp::verify() {
  SymTensorType in = getInput().getType(), ids = getIndices().getType(),
                out = getResult().getType();
  if (in.getRank() < 2 || ids.getRank() != in.getRank())
    return emitOpError("tokens and indices must have the same rank, at least 2");
  for (unsigned d = 0; d + 1 < in.getRank(); ++d)
    if (in.getDim(d) != ids.getDim(d))
      return emitOpError("tokens and indices differ in dimension ") << d;
  if (!isIntegerTensor(ids))
    return emitOpError("indices must have an integer element type");
  if (out.getRank() != 3 || out.getDim(2) != in.getDim(in.getRank() - 1))
    return emitOpError("result must be [experts, tokens per expert, ")
           << in.getDim(in.getRank() - 1).str() << "], got " << shapeStr(out);
  return success();
}

LogicalResult CombineOp::verify() {
  SymTensorType in = getInput().getType(), w = getWeights().getType(),
                ids = getIndices().getType(), out = getResult().getType();
  if (in.getRank() != 3)
    return emitOpError("expert outputs must be [experts, tokens per expert, "
                       "hidden], got ")
           << shapeStr(in);
  if (w.getDims() != ids.getDims())
    return emitOpError("weights and indices must have the same shape");
  if (!isIntegerTensor(ids))
    return emitOpError("indices must have an integer element type");
  SmallVector<sym::Expr> expected = ids.getDims();
  if (expected.empty())
    return emitOpError("indices need a top-k dimension");
  expected.back() = in.getDim(2);
  if (out.getDims() != expected)
    return emitOpError("result shape ")
           << shapeStr(out) << " should be " << shapeStr(out.withDims(expected));
  return success();
}

#define GET_OP_CLASSES
#include "Stage/Dialect/Stage/IR/StageOps.cpp.inc"
