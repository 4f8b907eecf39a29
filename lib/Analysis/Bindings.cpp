//===- Bindings.cpp - Values of the symbols of a module -------------------===//

#include "Stage/Analysis/Bindings.h"

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"

#include <unordered_set>

using namespace mlir;
using namespace mlir::stage;

std::string mlir::stage::parseBindingList(StringRef text, sym::Bindings &out) {
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [name, value] = item.split('=');
    name = name.trim();
    value = value.trim();
    int64_t v;
    if (name.empty() || value.empty() || value.getAsInteger(10, v))
      return "bad binding '" + item.trim().str() +
             "': expected NAME=INTEGER, as in B=8,tp=4";
    bool ident = (isalpha(name[0]) || name[0] == '_') &&
                 llvm::all_of(name, [](char c) { return isalnum(c) || c == '_'; });
    if (!ident)
      return "bad binding '" + item.trim().str() + "': '" + name.str() +
             "' is not a symbol name";
    out[name.str()] = v;
  }
  return "";
}

FailureOr<int64_t> mlir::stage::evaluateAt(Location loc, const sym::Expr &e,
                                           const sym::Bindings &b,
                                           StringRef what) {
  sym::Result<int64_t> v = e.evaluate(b);
  if (!v)
    return emitError(loc) << what << ": " << v.error();
  return *v;
}

bool mlir::stage::isPerExpertAverage(const sym::Expr &dim) {
  return llvm::any_of(dim.terms(), [](const sym::Expr::Term &t) {
    return t.mono.exponent("E") < 0;
  });
}

bool mlir::stage::isRequestAverage(const sym::Expr &dim) {
  return llvm::any_of(dim.terms(), [](const sym::Expr::Term &t) {
    return t.mono.exponent("B") > 0 &&
           (t.mono.exponent("ep") < 0 || t.mono.exponent("dp") < 0);
  });
}

bool mlir::stage::isServing(Operation *op) {
  Operation *top = op;
  while (Operation *parent = top->getParentOp())
    top = parent;
  bool found = false;
  top->walk([&](ServeOp) {
    found = true;
    return WalkResult::interrupt();
  });
  return found;
}

/// Whether `dim` has a size under `b`: a positive integer, or a positive
/// number for an average (per expert; per rank of a serving program).
static bool isPositiveSize(const sym::Expr &dim, const sym::Bindings &b,
                           bool serving) {
  if (isPerExpertAverage(dim) || (serving && isRequestAverage(dim))) {
    sym::Result<sym::Rational> v = dim.evaluateRational(b);
    return v && sym::Rational(0) < *v;
  }
  sym::Result<int64_t> v = dim.evaluate(b);
  return v && *v > 0;
}

static LogicalResult checkType(Operation *op, Type type, StringRef what,
                               const sym::Bindings &b, bool serving) {
  auto t = dyn_cast<SymTensorType>(type);
  if (!t)
    return success();
  for (unsigned d = 0; d < t.getRank(); ++d) {
    if (isPositiveSize(t.getDim(d), b, serving))
      continue;
    sym::Result<int64_t> v = t.getDim(d).evaluate(b);
    std::string subject = (what + " dimension " + std::to_string(d)).str();
    if (!v)
      return emitError(op->getLoc()) << subject << ": " << v.error();
    return op->emitError(subject) << ": " << t.getDim(d).str() << " = " << *v
                                  << " is not a positive size";
  }
  return success();
}

/// A sliding window no longer than the keys it slides over: a longer one
/// would count more scores than full attention has.
static LogicalResult checkWindow(AttentionOp a, const sym::Bindings &b) {
  if (!a.getWindow())
    return success();
  sym::Expr window = a.getWindow()->getValue();
  sym::Expr keys = a.getKey().getType().getDim(1);
  FailureOr<int64_t> w = evaluateAt(a.getLoc(), window, b, "sliding window");
  FailureOr<int64_t> t = evaluateAt(a.getLoc(), keys, b, "key length");
  if (failed(w) || failed(t))
    return failure();
  if (*w > *t)
    return a.emitError("sliding window ")
           << window.str() << " = " << *w << " exceeds the key length "
           << keys.str() << " = " << *t
           << ": import the model again at this sequence length (its "
              "attention is then full, not windowed)";
  return success();
}

namespace {
/// What verifyBindings checks under `root`, in the order a walk meets
/// them: each type at its first value (`root`'s own results aside), each
/// sliding window, each repeat count; a decode step loop's body is checked
/// through its own list, at the first and the last step. Derived once while
/// a SymbolicCache lives, so that a search checks each plan without walking
/// the IR, and each distinct size once (the types share most of theirs).
struct BindingChecks {
  enum Kind { TypeDims, Window, RepeatCount, StepLoop };
  struct Check {
    Kind kind;
    Operation *op;
    Type type;        // TypeDims
    std::string what; // TypeDims
    sym::Expr count;  // RepeatCount, StepLoop
  };
  std::vector<Check> checks;
  /// The sizes of the TypeDims checks' types, each once.
  std::vector<sym::Expr> sizes;
  /// In a serving program, requests per rank may be an average.
  bool serving = false;

  explicit BindingChecks(Operation *root) : serving(isServing(root)) {
    // Types are uniqued: each is checked once (at its first value).
    llvm::DenseSet<Type> seen;
    std::unordered_set<sym::Expr> seenSizes, seenCounts;
    auto typeCheck = [&](Operation *op, Type t, std::string what) {
      if (!seen.insert(t).second)
        return;
      checks.push_back({TypeDims, op, t, std::move(what)});
      if (auto tensor = dyn_cast<SymTensorType>(t))
        for (unsigned d = 0; d < tensor.getRank(); ++d)
          if (seenSizes.insert(tensor.getDim(d)).second)
            sizes.push_back(tensor.getDim(d));
    };
    root->walk<WalkOrder::PreOrder>([&](Operation *op) {
      bool nested = op != root;
      for (auto [i, v] : llvm::enumerate(op->getResults()))
        if (nested)
          typeCheck(op, v.getType(), "result " + std::to_string(i));
      if (auto a = dyn_cast<AttentionOp>(op); a && a.getWindow())
        checks.push_back({Window, op});
      if (auto rep = nested ? dyn_cast<RepeatOp>(op) : RepeatOp()) {
        // A decode step loop's body is checked under the step's bindings.
        // A count met before was checked first (the layers' stacks share
        // theirs).
        bool stepLoop = bool(rep.getStep());
        sym::Expr count = rep.getCount().getValue();
        if (stepLoop || seenCounts.insert(count).second)
          checks.push_back(
              {stepLoop ? StepLoop : RepeatCount, op, {}, {}, count});
        if (stepLoop)
          return WalkResult::skip();
      }
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (auto [i, arg] : llvm::enumerate(block.getArguments()))
            typeCheck(op, arg.getType(),
                      "region argument " + std::to_string(i));
      return WalkResult::advance();
    });
  }

  static std::shared_ptr<const BindingChecks> of(Operation *root) {
    static const char tag = 0;
    return memoizeDerived<BindingChecks>(&tag, root,
                                         [&] { return BindingChecks(root); });
  }
};
} // namespace

/// `list`'s checks under `b`, stopping at the first that fails: every size
/// positive, each sliding window no longer than its keys, each repeat count
/// not negative.
static LogicalResult runChecks(const BindingChecks &list,
                               const sym::Bindings &b) {
  // Every size positive: then no type check fails (else they say where).
  bool sizesPositive = llvm::all_of(
      list.sizes,
      [&](const sym::Expr &e) { return isPositiveSize(e, b, list.serving); });
  for (const BindingChecks::Check &c : list.checks) {
    switch (c.kind) {
    case BindingChecks::TypeDims:
      if (!sizesPositive &&
          failed(checkType(c.op, c.type, c.what, b, list.serving)))
        return failure();
      continue;
    case BindingChecks::Window:
      if (failed(checkWindow(cast<AttentionOp>(c.op), b)))
        return failure();
      continue;
    case BindingChecks::RepeatCount:
    case BindingChecks::StepLoop:
      break;
    }
    auto rep = cast<RepeatOp>(c.op);
    FailureOr<int64_t> n = evaluateAt(rep.getLoc(), c.count, b, "repeat count");
    if (failed(n))
      return failure();
    if (*n < 0)
      return rep.emitError("repeat count ") << *n << " is negative";
    if (c.kind != BindingChecks::StepLoop)
      continue;
    // Its body's sizes at the first and the last step.
    std::shared_ptr<const BindingChecks> body = BindingChecks::of(rep);
    for (int64_t at : {int64_t(0), *n - 1}) {
      if (at < 0)
        continue;
      sym::Bindings inner = b;
      inner[rep.getStep()->str()] = at;
      if (failed(runChecks(*body, inner)))
        return failure();
    }
  }
  return success();
}

LogicalResult mlir::stage::verifyBindings(Operation *root,
                                          const sym::Bindings &b) {
  return runChecks(*BindingChecks::of(root), b);
}
