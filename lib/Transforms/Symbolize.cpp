//===- Symbolize.cpp - Static extents to named symbols --------------------===//
//
// An imported graph has constant extents (768, 3072); the sharding rules,
// the micro-batching and the reports work on named ones (D, F, B). Every
// tensor dimension is a slot; slots that the ops make equal (the factors
// of FactorModel, the kept dimensions of a slice or concat) form one class.
// A class is named, in this order of precedence:
//
//   1. by a `stage.dims` annotation on the input or weight it starts from;
//   2. by the one symbol of the given list whose value is its extent;
//   3. by a reshape or concat relating it to named classes (a reshape
//      [B, S, D] -> [B, S, H, 64] names 64 `D/H`; [B*S, D] <- [B, S, D]
//      names the merged dimension `B*S`);
//   4. otherwise it keeps its constant (a 3 of a fused QKV, a 1).
//
// A class that two symbols could name and no rule decides is an error that
// lists the candidates.
//
//===----------------------------------------------------------------------===//

#include "Stage/Analysis/Bindings.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"
#include "Stage/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::stage {
#define GEN_PASS_DEF_STAGESYMBOLIZE
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

namespace {

/// One dimension of one tensor value.
using Slot = std::pair<Value, unsigned>;

/// `big` is `factor` times the product (or, for a concat, the sum) of
/// `parts`.
struct Relation {
  unsigned big;
  SmallVector<unsigned> parts;
  bool sum = false;
  int64_t factor = 1;
};

class Symbolizer {
public:
  Symbolizer(ModuleOp module, const sym::Bindings &symbols)
      : module(module), symbols(symbols) {}
  LogicalResult run();

private:
  unsigned slot(Value v, unsigned d);
  int64_t extent(unsigned s) const;
  void unite(unsigned a, unsigned b) { classes.unionSets(a, b); }
  unsigned leader(unsigned s) { return classes.getLeaderValue(s); }
  void collect(Operation *op);
  void relateReshape(Value in, Value out);
  LogicalResult seed(Operation *op, ArrayAttr dims);
  bool derive();
  LogicalResult rewrite();

  ModuleOp module;
  const sym::Bindings &symbols;
  SmallVector<Slot> slots;
  DenseMap<Value, unsigned> firstSlot;
  llvm::EquivalenceClasses<unsigned> classes;
  SmallVector<Relation> relations;
  /// Named classes, by leader.
  DenseMap<unsigned, Expr> names;
  SmallVector<std::pair<Operation *, ArrayAttr>> annotated;
};

} // namespace

/// The value of a constant extent; -1 for a symbolic one.
static int64_t constantOf(const Expr &e) {
  std::optional<sym::Rational> c = e.getConstant();
  std::optional<int64_t> v = c ? c->toInt64() : std::nullopt;
  return v ? *v : -1;
}

unsigned Symbolizer::slot(Value v, unsigned d) {
  auto [it, inserted] = firstSlot.try_emplace(v, slots.size());
  if (inserted) {
    unsigned rank = cast<SymTensorType>(v.getType()).getRank();
    for (unsigned i = 0; i < rank; ++i) {
      classes.insert(slots.size());
      slots.push_back({v, i});
    }
  }
  return it->second + d;
}

int64_t Symbolizer::extent(unsigned s) const {
  auto [v, d] = slots[s];
  return constantOf(cast<SymTensorType>(v.getType()).getDim(d));
}

/// Pairs the equal dimensions of a reshape and relates each run of one side
/// to the dimension of the other that it merges into or splits from.
void Symbolizer::relateReshape(Value in, Value out) {
  auto it = cast<SymTensorType>(in.getType()),
       ot = cast<SymTensorType>(out.getType());
  unsigned i = 0, j = 0;
  auto size = [](SymTensorType t, unsigned k) {
    return constantOf(t.getDim(k));
  };
  while (i < it.getRank() && j < ot.getRank()) {
    if (size(it, i) == size(ot, j)) {
      unite(slot(in, i++), slot(out, j++));
      continue;
    }
    // Grow the smaller side until the products meet.
    unsigned i1 = i + 1, j1 = j + 1;
    int64_t pi = size(it, i), pj = size(ot, j);
    while (pi != pj) {
      if (pi < pj && i1 < it.getRank())
        pi *= size(it, i1++);
      else if (pj < pi && j1 < ot.getRank())
        pj *= size(ot, j1++);
      else
        return;
    }
    if (i1 - i == 1 || j1 - j == 1) {
      bool merges = j1 - j == 1;
      Relation r;
      r.big = merges ? slot(out, j) : slot(in, i);
      for (unsigned k = merges ? i : j; k < (merges ? i1 : j1); ++k)
        r.parts.push_back(merges ? slot(in, k) : slot(out, k));
      relations.push_back(r);
    }
    i = i1, j = j1;
  }
}

void Symbolizer::collect(Operation *op) {
  for (Value r : op->getResults())
    if (isa<SymTensorType>(r.getType()))
      slot(r, 0);
  if (auto dims = getDimNames(op))
    annotated.push_back({op, dims});
  if (auto r = dyn_cast<ReshapeOp>(op))
    return relateReshape(r.getInput(), r.getResult());
  if (auto c = dyn_cast<ConcatOp>(op)) {
    Relation r{slot(c.getResult(), c.getDim()), {}, /*sum=*/true};
    for (Value in : c.getInputs())
      r.parts.push_back(slot(in, c.getDim()));
    relations.push_back(r);
  }
  // A slice that is one of n equal parts (q, k or v of a fused projection)
  // has 1/n of its input's extent.
  if (auto sl = dyn_cast<SliceOp>(op)) {
    int64_t whole = extent(slot(sl.getInput(), sl.getDim()));
    int64_t part = extent(slot(sl.getResult(), sl.getDim()));
    if (whole > 0 && part > 0 && whole % part == 0 && whole != part)
      relations.push_back(Relation{slot(sl.getInput(), sl.getDim()),
                                   {slot(sl.getResult(), sl.getDim())},
                                   /*sum=*/false, whole / part});
  }
  auto rule = dyn_cast<ShardingRuleOpInterface>(op);
  if (!rule)
    return;
  FactorModel m = rule.getShardingRule(ShardingRuleOptions());
  // A slice or concat keeps every dimension but its own.
  int64_t own = -1;
  if (auto s = dyn_cast<SliceOp>(op))
    own = s.getDim();
  if (auto c = dyn_cast<ConcatOp>(op))
    own = c.getDim();
  DenseMap<int, unsigned> byFactor;
  auto add = [&](Value v, ArrayRef<int> factors) {
    for (auto [d, f] : llvm::enumerate(factors)) {
      if (f < 0 || int64_t(d) == own)
        continue;
      unsigned s = slot(v, d);
      auto [it, inserted] = byFactor.try_emplace(f, s);
      if (!inserted)
        unite(it->second, s);
    }
  };
  for (auto [v, f] : llvm::zip(op->getOperands(), m.operands))
    add(v, f);
  for (auto [v, f] : llvm::zip(op->getResults(), m.results))
    add(v, f);
}

LogicalResult Symbolizer::seed(Operation *op, ArrayAttr dims) {
  Value v = op->getResult(0);
  auto t = cast<SymTensorType>(v.getType());
  if (dims.size() != t.getRank())
    return op->emitOpError("has ")
           << dims.size() << " names in '" << getDimNamesAttrName()
           << "' for a rank-" << t.getRank() << " tensor";
  for (auto [d, a] : llvm::enumerate(dims)) {
    auto text = dyn_cast<StringAttr>(a);
    if (!text)
      return op->emitOpError("'")
             << getDimNamesAttrName() << "' must list strings";
    sym::Result<Expr> e = Expr::parse(text.str());
    if (!e)
      return op->emitOpError("'")
             << getDimNamesAttrName() << "': " << e.error();
    sym::Result<int64_t> value = e->evaluate(symbols);
    if (!value)
      return op->emitOpError("'")
             << getDimNamesAttrName() << "': " << value.error();
    int64_t ext = extent(slot(v, d));
    if (*value != ext)
      return op->emitOpError("names dimension ")
             << d << " '" << text.str() << "' = " << *value
             << ", but its extent is " << ext;
    unsigned l = leader(slot(v, d));
    auto [it, inserted] = names.try_emplace(l, *e);
    if (!inserted && it->second != *e)
      return op->emitOpError("names dimension ")
             << d << " '" << text.str() << "', but it is the same dimension "
             << "as one named '" << it->second.str() << "'";
  }
  removeDimNames(op);
  return success();
}

/// Names classes from relations to named ones; true when it named any.
bool Symbolizer::derive() {
  bool changed = false;
  auto named = [&](unsigned s) -> std::optional<Expr> {
    auto it = names.find(leader(s));
    if (it != names.end())
      return it->second;
    return std::nullopt;
  };
  for (const Relation &r : relations) {
    std::optional<Expr> big = named(r.big);
    SmallVector<unsigned> open;
    Expr known = r.sum ? Expr(0) : Expr(r.factor);
    bool anyNamed = false;
    for (unsigned p : r.parts) {
      std::optional<Expr> e = named(p);
      if (!e) {
        open.push_back(p);
        continue;
      }
      anyNamed |= !e->isConstant();
      known = r.sum ? known + *e : known * *e;
    }
    if (!big && anyNamed) {
      // The unnamed parts keep their extents.
      for (unsigned p : open)
        known = r.sum ? known + Expr(extent(p)) : known * Expr(extent(p));
      names[leader(r.big)] = known;
      changed = true;
      continue;
    }
    if (big && open.size() == 1 && !big->isConstant()) {
      Expr part;
      if (r.sum) {
        part = *big - known;
      } else {
        sym::Result<Expr> q = big->div(known);
        if (!q)
          continue;
        part = *q;
      }
      sym::Result<int64_t> v = part.evaluate(symbols);
      if (!v || *v != extent(open.front()))
        continue;
      names[leader(open.front())] = part;
      changed = true;
    }
  }
  return changed;
}

LogicalResult Symbolizer::rewrite() {
  auto nameOf = [&](unsigned s) {
    auto it = names.find(leader(s));
    return it != names.end() ? it->second : Expr(extent(s));
  };
  for (auto &[v, first] : firstSlot) {
    auto t = cast<SymTensorType>(v.getType());
    SmallVector<Expr> dims;
    for (unsigned d = 0; d < t.getRank(); ++d)
      dims.push_back(nameOf(first + d));
    v.setType(t.withDims(dims));
  }
  MLIRContext *ctx = module.getContext();
  WalkResult r = module.walk([&](Operation *op) -> WalkResult {
    if (auto s = dyn_cast<SliceOp>(op)) {
      // The size is the result's; an offset that is a multiple of it (the
      // k-th of equal parts) scales with it.
      Expr size = s.getResult().getType().getDim(s.getDim());
      int64_t n = constantOf(s.getSize().getValue());
      int64_t off = constantOf(s.getOffset().getValue());
      Expr offset = n > 0 && off >= 0 && off % n == 0 ? Expr(off / n) * size : Expr(off);
      s.setSizeAttr(ExprAttr::get(ctx, size));
      s.setOffsetAttr(ExprAttr::get(ctx, offset));
    }
    if (auto rs = dyn_cast<ReshapeOp>(op)) {
      auto count = [](Type type) {
        auto dims = cast<SymTensorType>(type).getDims();
        return sym::product(std::vector<Expr>(dims.begin(), dims.end()));
      };
      if (count(rs.getInput().getType()) != count(rs.getResult().getType()))
        // Equal in value, not as symbols: a width D split into H heads of
        // Dh, with all three in the list.
        return rs->emitOpError("cannot be named consistently: ")
               << rs.getInput().getType() << " -> " << rs.getResult().getType()
               << " (" << count(rs.getInput().getType()).str() << " and "
               << count(rs.getResult().getType()).str()
               << " are equal in value but not as symbols); name the "
                  "dimensions with 'stage.dims' annotations (as \"H*Dh\" on "
                  "the weights producing the merged one), or leave a "
                  "derived symbol out of the list";
    }
    if (auto fn = dyn_cast<func::FuncOp>(op))
      if (!fn.isExternal())
        fn.setType(FunctionType::get(
            ctx, fn.getArgumentTypes(),
            fn.getBody().back().getTerminator()->getOperandTypes()));
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

LogicalResult Symbolizer::run() {
  module.walk([&](Operation *op) {
    if (!isa<func::FuncOp, ModuleOp>(op))
      collect(op);
  });
  for (auto &[op, dims] : annotated)
    if (failed(seed(op, dims)))
      return failure();
  // What follows from the annotations comes first: the third of a fused
  // projection named "3*H*Dh" is H*Dh, even when its extent is D's.
  while (derive()) {
  }
  // Unique matches by value; the ambiguous wait for a relation to decide.
  std::map<int64_t, SmallVector<std::string>> byValue;
  for (auto &[name, value] : symbols)
    byValue[value].push_back(name);
  llvm::MapVector<unsigned, SmallVector<std::string>> ambiguous;
  for (unsigned s = 0; s < slots.size(); ++s) {
    unsigned l = leader(s);
    if (names.count(l) || ambiguous.count(l))
      continue;
    int64_t ext = extent(s);
    auto it = byValue.find(ext);
    if (ext <= 1 || it == byValue.end())
      continue;
    if (it->second.size() == 1)
      names[l] = Expr::symbol(it->second.front());
    else
      ambiguous[l] = it->second;
  }
  while (derive()) {
  }
  for (auto &[l, candidates] : ambiguous) {
    if (names.count(l))
      continue;
    auto [v, d] = slots[l];
    Location loc = v.getDefiningOp() ? v.getDefiningOp()->getLoc()
                                     : v.getLoc();
    InFlightDiagnostic diag = emitError(loc)
                              << "dimension " << d << " (extent " << extent(l)
                              << ") could be any of ";
    llvm::interleave(candidates, diag, ", ");
    diag << "; name it with a '" << getDimNamesAttrName()
         << "' annotation on the argument it comes from";
    return failure();
  }
  if (failed(rewrite()))
    return failure();
  FailureOr<sym::Bindings> bindings = getModuleBindings(module, symbols);
  if (failed(bindings))
    return failure();
  setModuleBindings(module, *bindings);
  return success();
}

namespace {
struct SymbolizePass : mlir::stage::impl::StageSymbolizeBase<SymbolizePass> {
  using StageSymbolizeBase::StageSymbolizeBase;

  /// `stage-symbolize="B=8,S=128"`: the options are the symbols themselves.
  LogicalResult initializeOptions(
      StringRef options,
      function_ref<LogicalResult(const Twine &)> errorHandler) override {
    if (options.trim().starts_with("symbols="))
      return StageSymbolizeBase::initializeOptions(options, errorHandler);
    sym::Bindings given;
    std::string error = parseBindingList(options, given);
    if (!error.empty())
      return errorHandler("stage-symbolize: " + error);
    SmallVector<std::string> items;
    for (const auto &[name, value] : given)
      items.push_back(name + "=" + std::to_string(value));
    symbols = items;
    return success();
  }

  void runOnOperation() override {
    sym::Bindings given;
    for (const std::string &item : symbols) {
      std::string error = parseBindingList(item, given);
      if (!error.empty()) {
        emitOptionError(getOperation()) << "stage-symbolize: " << error;
        return signalPassFailure();
      }
    }
    if (given.empty()) {
      emitOptionError(getOperation())
          << "stage-symbolize: give the symbols, as in "
             "stage-symbolize=\"B=8,S=128,D=768\"";
      return signalPassFailure();
    }
    if (failed(Symbolizer(getOperation(), given).run()))
      signalPassFailure();
  }
};
} // namespace
