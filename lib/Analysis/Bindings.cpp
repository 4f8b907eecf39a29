//===- Bindings.cpp - Values of the symbols of a module -------------------===//

#include "Stage/Analysis/Bindings.h"

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

LogicalResult mlir::stage::verifyBindings(Operation *root,
                                          const sym::Bindings &b) {
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
          if (failed(verifyBindings(op, inner)))
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
