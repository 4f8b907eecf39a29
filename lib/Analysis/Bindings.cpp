//===- Bindings.cpp - Values of the symbols of a module -------------------===//

#include "Stage/Analysis/Bindings.h"

#include "Stage/Analysis/CostAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"

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

static LogicalResult checkType(Operation *op, Type type, StringRef what,
                               const sym::Bindings &b) {
  auto t = dyn_cast<SymTensorType>(type);
  if (!t)
    return success();
  for (unsigned d = 0; d < t.getRank(); ++d) {
    sym::Result<int64_t> v = t.getDim(d).evaluate(b);
    if (v && *v > 0)
      continue;
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

static LogicalResult walkBindings(Operation *root, const sym::Bindings &b) {
  // Types are uniqued: each is checked once (at its first result).
  llvm::DenseSet<Type> valid;
  WalkResult r = root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    // A step loop checks its body under its own bindings (below).
    bool nested = op != root;
    for (auto [i, v] : llvm::enumerate(op->getResults()))
      if (nested && !valid.contains(v.getType())) {
        if (failed(
                checkType(op, v.getType(), ("result " + std::to_string(i)), b)))
          return WalkResult::interrupt();
        valid.insert(v.getType());
      }
    if (auto a = dyn_cast<AttentionOp>(op); a && failed(checkWindow(a, b)))
      return WalkResult::interrupt();
    auto rep = nested ? dyn_cast<RepeatOp>(op) : RepeatOp();
    if (rep) {
      FailureOr<int64_t> n =
          evaluateAt(op->getLoc(), rep.getCount().getValue(), b, "repeat count");
      if (failed(n))
        return WalkResult::interrupt();
      if (*n < 0) {
        op->emitError("repeat count ") << *n << " is negative";
        return WalkResult::interrupt();
      }
      // A decode step loop: its body's sizes at the first and last step.
      if (std::optional<StringRef> step = rep.getStep()) {
        for (int64_t at : {int64_t(0), *n - 1}) {
          if (at < 0)
            continue;
          sym::Bindings inner = b;
          inner[step->str()] = at;
          if (failed(walkBindings(op, inner)))
            return WalkResult::interrupt();
        }
        return WalkResult::skip();
      }
    }
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (auto [i, arg] : llvm::enumerate(block.getArguments()))
          if (!valid.contains(arg.getType())) {
            if (failed(checkType(op, arg.getType(),
                                 ("region argument " + std::to_string(i)), b)))
              return WalkResult::interrupt();
            valid.insert(arg.getType());
          }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

namespace {
/// What walkBindings checks under `root`, in its order, when no decode step
/// loop needs a body checked under other bindings: each type at its first
/// value, each sliding window, each repeat count. Derived once while a
/// SymbolicCache lives, so that a search checks each plan without walking
/// the IR.
struct BindingChecks {
  struct Check {
    Operation *op;
    Type type; // none for a window or a repeat count
    std::string what;
  };
  std::vector<Check> checks;
  bool complete = true;

  explicit BindingChecks(Operation *root) {
    llvm::DenseSet<Type> seen;
    auto typeCheck = [&](Operation *op, Type t, std::string what) {
      if (seen.insert(t).second)
        checks.push_back({op, t, std::move(what)});
    };
    root->walk<WalkOrder::PreOrder>([&](Operation *op) {
      bool nested = op != root;
      for (auto [i, v] : llvm::enumerate(op->getResults()))
        if (nested)
          typeCheck(op, v.getType(), "result " + std::to_string(i));
      if (auto a = dyn_cast<AttentionOp>(op); a && a.getWindow())
        checks.push_back({op, Type(), ""});
      if (auto rep = nested ? dyn_cast<RepeatOp>(op) : RepeatOp()) {
        checks.push_back({op, Type(), ""});
        if (rep.getStep())
          complete = false;
      }
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (auto [i, arg] : llvm::enumerate(block.getArguments()))
            typeCheck(op, arg.getType(),
                      "region argument " + std::to_string(i));
    });
  }
};
} // namespace

LogicalResult mlir::stage::verifyBindings(Operation *root,
                                          const sym::Bindings &b) {
  static const char tag = 0;
  std::shared_ptr<const BindingChecks> list =
      SymbolicCache::active()
          ? memoizeDerived<BindingChecks>(&tag, root,
                                          [&] { return BindingChecks(root); })
          : nullptr;
  if (!list || !list->complete)
    return walkBindings(root, b);
  for (const BindingChecks::Check &c : list->checks) {
    if (c.type) {
      if (failed(checkType(c.op, c.type, c.what, b)))
        return failure();
    } else if (auto a = dyn_cast<AttentionOp>(c.op)) {
      if (failed(checkWindow(a, b)))
        return failure();
    } else {
      auto rep = cast<RepeatOp>(c.op);
      FailureOr<int64_t> n = evaluateAt(rep.getLoc(), rep.getCount().getValue(),
                                        b, "repeat count");
      if (failed(n))
        return failure();
      if (*n < 0)
        return rep.emitError("repeat count ") << *n << " is negative";
    }
  }
  return success();
}
