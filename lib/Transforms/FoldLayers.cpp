//===- FoldLayers.cpp - The repeated layers of a flat graph to a repeat ---===//
//
// Finds, in a function's body, the longest run of k consecutive segments of
// P ops that are the same layer: op by op the same operation, attributes and
// types (a parameter's name aside), every operand wired the same way. An
// operand of a segment's op is
//   - internal: a result of an earlier op of the same segment;
//   - carried: a result of the previous segment (the first segment reads a
//     value from before the run instead, the carry's initial value);
//   - a slice: a parameter of its own per segment, all of one type and kind;
//   - shared: the same value, defined before the run, in every segment.
// Parameters defined inside the segments (an imported graph's per-layer
// constants) are slices too. A segment's values are used by that segment,
// by the next one (carried values) or, for the last segment's carried
// values, after the run. The run becomes one stage.repeat over the first
// segment, its slices stacked parameters.
//
// Candidates come from a rolling hash of the ops' structure (two segments
// compare in O(1)); the most ops covered wins, then the shortest period (the
// most layers), then the fewest carried values (the layer boundary that only
// the residual stream crosses).
//
//===----------------------------------------------------------------------===//

#include "Stage/Transforms/Passes.h"

#include "Stage/Analysis/Bindings.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/StringExtras.h"

#include <optional>
#include <queue>

namespace mlir::stage {
#define GEN_PASS_DEF_STAGEFOLDLAYERS
#include "Stage/Transforms/Passes.h.inc"
} // namespace mlir::stage

using namespace mlir;
using namespace mlir::stage;

namespace {

/// Whether `a` and `b` are the same operation up to their operands'
/// identities and a parameter's name.
bool sameStructure(Operation *a, Operation *b) {
  if (a->getName() != b->getName() ||
      a->getNumOperands() != b->getNumOperands() ||
      a->getResultTypes() != b->getResultTypes() || a->getNumRegions() ||
      b->getNumRegions())
    return false;
  for (auto [x, y] : llvm::zip(a->getOperands(), b->getOperands()))
    if (x.getType() != y.getType())
      return false;
  if (auto pa = dyn_cast<ParamOp>(a)) {
    auto pb = cast<ParamOp>(b);
    return pa.getKind() == pb.getKind() &&
           pa.getGroupAttr() == pb.getGroupAttr() &&
           a->getDiscardableAttrDictionary() ==
               b->getDiscardableAttrDictionary();
  }
  return a->getAttrDictionary() == b->getAttrDictionary();
}

uint64_t structureHash(Operation *op) {
  llvm::hash_code h =
      llvm::hash_combine(op->getName().getAsOpaquePointer(),
                         op->getNumOperands(), op->getNumRegions());
  for (Type t : op->getResultTypes())
    h = llvm::hash_combine(h, t.getAsOpaquePointer());
  for (Value v : op->getOperands())
    h = llvm::hash_combine(h, v.getType().getAsOpaquePointer());
  if (auto p = dyn_cast<ParamOp>(op))
    h = llvm::hash_combine(h, static_cast<int>(p.getKind()));
  else
    h = llvm::hash_combine(h, op->getAttrDictionary().getAsOpaquePointer());
  return h;
}

/// Polynomial hashes of every prefix of a sequence (modulo 2^64).
class RollingHash {
public:
  explicit RollingHash(ArrayRef<uint64_t> h)
      : prefix(h.size() + 1, 0), power(h.size() + 1, 1) {
    const uint64_t base = 0x100000001b3ull;
    for (size_t i = 0; i < h.size(); ++i) {
      prefix[i + 1] = prefix[i] * base + h[i];
      power[i + 1] = power[i] * base;
    }
  }
  uint64_t of(int64_t begin, int64_t length) const {
    return prefix[begin + length] - prefix[begin] * power[length];
  }

private:
  std::vector<uint64_t> prefix, power;
};

struct Run {
  int64_t start, period, count;
  int64_t covered() const { return period * count; }
};

/// The better run to try first: the most ops covered, then the shortest
/// period, then the earliest.
bool before(const Run &a, const Run &b) {
  if (a.covered() != b.covered())
    return a.covered() > b.covered();
  if (a.period != b.period)
    return a.period < b.period;
  if (a.start != b.start)
    return a.start < b.start;
  return a.count > b.count;
}

/// Every maximal run of at least `minCount` equal consecutive segments that
/// hold more than parameters.
std::vector<Run> findRuns(ArrayRef<uint64_t> hashes, ArrayRef<bool> isParam,
                          int64_t minCount) {
  int64_t n = hashes.size();
  RollingHash rh(hashes);
  std::vector<int64_t> ops(n + 1, 0); // ops before position i, params aside
  for (int64_t i = 0; i < n; ++i)
    ops[i + 1] = ops[i] + (isParam[i] ? 0 : 1);
  std::vector<Run> runs;
  for (int64_t p = 2; p * minCount <= n; ++p)
    for (int64_t s = 0; s + p * minCount <= n; ++s) {
      uint64_t first = rh.of(s, p);
      if (s >= p && rh.of(s - p, p) == first)
        continue; // the tail of a run starting a period earlier
      if (ops[s + p] == ops[s])
        continue;
      int64_t k = 1;
      while (s + (k + 1) * p <= n && rh.of(s + k * p, p) == first)
        ++k;
      if (k >= minCount)
        runs.push_back({s, p, k});
    }
  return runs;
}

/// Where one operand of the body's copy of a template op comes from.
struct Source {
  enum Kind { Internal, Carried, Slice, Shared } kind;
  int64_t position = 0; // Internal: the template op; Carried: the carry
  unsigned result = 0;  // Internal: its result
  Value shared;
};

/// A run that is a layer stack, and how to fold it.
struct Fold {
  Run run;
  std::vector<SmallVector<Source>> sources; // [template op][operand]
  /// Carried values: (template op, result) and the initial value.
  SmallVector<std::pair<int64_t, unsigned>> carried;
  SmallVector<Value> inits;
  /// Per slice, the k parameters it stacks (one per layer).
  std::vector<SmallVector<ParamOp>> slices;
  /// Template ops that are parameters of the layer: their slice.
  DenseMap<int64_t, unsigned> innerParams;
};

class Folder {
public:
  Folder(Block &block) : block(block) {
    for (Operation &op : block.without_terminator()) {
      index[&op] = int64_t(ops.size());
      ops.push_back(&op);
    }
    index[block.getTerminator()] = int64_t(ops.size());
  }

  std::optional<Fold> best(int64_t minCount);
  LogicalResult apply(const Fold &f, StringRef countSymbol);

private:
  std::optional<Fold> check(const Run &r);
  int64_t positionOf(Value v) const {
    auto res = dyn_cast<OpResult>(v);
    if (!res)
      return -1;
    auto it = index.find(res.getOwner());
    return it == index.end() ? -1 : it->second;
  }
  /// -1 before the run, k after it, else the segment.
  int64_t segmentOf(const Run &r, int64_t position) const {
    if (position < r.start)
      return -1;
    int64_t s = (position - r.start) / r.period;
    return std::min(s, r.count);
  }

  Block &block;
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> index;
};

std::optional<Fold> Folder::best(int64_t minCount) {
  SmallVector<uint64_t> hashes;
  SmallVector<bool> isParam;
  for (Operation *op : ops) {
    hashes.push_back(structureHash(op));
    isParam.push_back(isa<ParamOp>(op));
  }
  // The maximal runs, best first; a run that does not fold gives way to
  // its runs of one layer fewer (a layer at either end dropped), explored
  // in the same order. Most checks fail at their first op; the bound keeps
  // a long chain of identical small ops from taking long.
  auto worse = [](const Run &a, const Run &b) { return before(b, a); };
  std::priority_queue<Run, std::vector<Run>, decltype(worse)> queue(worse);
  for (const Run &r : findRuns(hashes, isParam, minCount))
    queue.push(r);
  constexpr int64_t kMaxChecks = 4096;
  std::optional<Fold> chosen;
  std::optional<Run> previous;
  for (int64_t checks = 0; !queue.empty() && checks < kMaxChecks;) {
    Run r = queue.top();
    queue.pop();
    // A run reached from both of its parents pops twice in a row.
    if (previous && !before(*previous, r))
      continue;
    previous = r;
    ++checks;
    if (chosen &&
        (r.covered() < chosen->run.covered() || r.period > chosen->run.period))
      break;
    std::optional<Fold> f = check(r);
    if (f) {
      if (!chosen || f->carried.size() < chosen->carried.size())
        chosen = std::move(f);
      continue;
    }
    if (r.count > minCount) {
      queue.push({r.start, r.period, r.count - 1});
      queue.push({r.start + r.period, r.period, r.count - 1});
    }
  }
  return chosen;
}

/// One function: every op of the run is compared with the first layer's
/// (structure, wiring, weights) in one pass over the layers.
std::optional<Fold> Folder::check(const Run &r) {
  const int64_t s = r.start, p = r.period, k = r.count;
  auto at = [&](int64_t segment, int64_t j) {
    return ops[s + segment * p + j];
  };
  Fold f;
  f.run = r;
  f.sources.resize(p);
  DenseMap<Operation *, unsigned> sliceOf; // first layer's parameter -> slice
  auto addSlice = [&](SmallVector<ParamOp> params) -> std::optional<unsigned> {
    f.slices.push_back(std::move(params));
    return unsigned(f.slices.size() - 1);
  };
  for (int64_t j = 0; j < p; ++j) {
    Operation *t = at(0, j);
    for (int64_t i = 1; i < k; ++i)
      if (!sameStructure(t, at(i, j)))
        return std::nullopt;
    if (isa<ParamOp>(t)) {
      SmallVector<ParamOp> params;
      for (int64_t i = 0; i < k; ++i)
        params.push_back(cast<ParamOp>(at(i, j)));
      std::optional<unsigned> slice = addSlice(std::move(params));
      if (!slice)
        return std::nullopt;
      f.innerParams[j] = *slice;
      continue;
    }
    for (unsigned o = 0; o < t->getNumOperands(); ++o) {
      auto operandAt = [&](int64_t i) { return at(i, j)->getOperand(o); };
      // Segment 1 tells how the operand is wired; every segment must agree.
      Value v1 = operandAt(1);
      int64_t p1 = positionOf(v1), seg1 = p1 < 0 ? -1 : segmentOf(r, p1);
      unsigned rn = p1 < 0 ? 0 : cast<OpResult>(v1).getResultNumber();
      Source src;
      if (seg1 == 1) {
        int64_t rel = p1 - s - p;
        for (int64_t i = 0; i < k; ++i)
          if (operandAt(i) != at(i, rel)->getResult(rn))
            return std::nullopt;
        if (auto it = f.innerParams.find(rel); it != f.innerParams.end())
          src = Source{Source::Slice, int64_t(it->second), 0, {}};
        else
          src = Source{Source::Internal, rel, rn, {}};
      } else if (seg1 == 0) {
        int64_t rel = p1 - s;
        if (f.innerParams.count(rel))
          return std::nullopt;
        for (int64_t i = 1; i < k; ++i)
          if (operandAt(i) != at(i - 1, rel)->getResult(rn))
            return std::nullopt;
        Value init = operandAt(0);
        if (positionOf(init) >= s)
          return std::nullopt;
        auto key = std::make_pair(rel, rn);
        auto *it = llvm::find(f.carried, key);
        if (it == f.carried.end()) {
          f.carried.push_back(key);
          f.inits.push_back(init);
          it = f.carried.end() - 1;
        } else if (f.inits[it - f.carried.begin()] != init) {
          return std::nullopt;
        }
        src = Source{Source::Carried, it - f.carried.begin(), 0, {}};
      } else if (seg1 == -1) {
        bool same = true;
        for (int64_t i = 0; i < k; ++i) {
          if (positionOf(operandAt(i)) >= s)
            return std::nullopt;
          same &= operandAt(i) == v1;
        }
        if (same) {
          src = Source{Source::Shared, 0, 0, v1};
        } else {
          // A weight of each layer's own.
          SmallVector<ParamOp> params;
          for (int64_t i = 0; i < k; ++i) {
            auto q = operandAt(i).getDefiningOp<ParamOp>();
            if (!q || (i && !sameStructure(q, params[0])) ||
                llvm::is_contained(params, q))
              return std::nullopt;
            params.push_back(q);
          }
          auto it = sliceOf.find(params[0]);
          unsigned slice;
          if (it != sliceOf.end()) {
            slice = it->second;
            if (f.slices[slice] != ArrayRef<ParamOp>(params))
              return std::nullopt;
          } else {
            std::optional<unsigned> added = addSlice(std::move(params));
            if (!added)
              return std::nullopt;
            slice = *added;
            sliceOf[f.slices[slice][0]] = slice;
          }
          src = Source{Source::Slice, int64_t(slice), 0, {}};
        }
      } else {
        return std::nullopt;
      }
      f.sources[j].push_back(src);
    }
  }
  // A segment's values reach its own segment, the next one as carried
  // values, and past the run only as the last segment's carried values.
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < p; ++j)
      for (OpResult res : at(i, j)->getResults()) {
        bool isCarried = llvm::is_contained(
            f.carried, std::make_pair(j, res.getResultNumber()));
        for (Operation *user : res.getUsers()) {
          Operation *owner = block.findAncestorOpInBlock(*user);
          int64_t seg = owner ? segmentOf(r, index.lookup(owner)) : -2;
          if (seg == i)
            continue;
          if (!isCarried || (seg != i + 1 && !(seg == k && i == k - 1)))
            return std::nullopt;
        }
      }
  // A layer: fed by the previous one, with weights of its own.
  bool weights = llvm::any_of(f.slices, [](SmallVector<ParamOp> &s) {
    return s[0].getKind() == ParamKind::weight;
  });
  if (f.carried.empty() || !weights)
    return std::nullopt;
  return f;
}

/// The layers' common parameter name: the one dot-separated component that
/// differs is the layer index, dropped when the layers are 0, 1, ... as in
/// `h.3.attn.w` -> `h.attn.w`, a range on the component before it otherwise
/// (`h[3:6].attn.w`, as the HF importer names a partial stack). Any other
/// difference keeps the first layer's name.
std::string stackedName(ArrayRef<ParamOp> layers) {
  SmallVector<ParamOp> params(layers);
  SmallVector<SmallVector<StringRef>> parts;
  for (ParamOp q : params) {
    parts.emplace_back();
    q.getName().split(parts.back(), '.');
  }
  std::string fallback = params[0].getName().str();
  std::optional<size_t> differing;
  for (size_t c = 0; c < parts[0].size(); ++c) {
    bool same = llvm::all_of(parts, [&](const SmallVector<StringRef> &n) {
      return n.size() == parts[0].size() && n[c] == parts[0][c];
    });
    if (same)
      continue;
    if (differing)
      return fallback;
    differing = c;
  }
  if (!differing)
    return fallback;
  int64_t first = 0;
  for (auto [i, n] : llvm::enumerate(parts)) {
    int64_t index;
    if (n[*differing].getAsInteger(10, index) ||
        (i == 0 ? (first = index, false) : index != first + int64_t(i)))
      return fallback;
  }
  SmallVector<std::string> kept(parts[0].begin(), parts[0].end());
  kept.erase(kept.begin() + *differing);
  if (first != 0) {
    if (*differing == 0)
      return fallback;
    kept[*differing - 1] += "[" + std::to_string(first) + ":" +
                            std::to_string(first + int64_t(parts.size())) + "]";
  }
  return llvm::join(kept, ".");
}

LogicalResult Folder::apply(const Fold &f, StringRef countSymbol) {
  const Run &r = f.run;
  MLIRContext *ctx = block.getParentOp()->getContext();
  sym::Expr count = sym::Expr::symbol(countSymbol.str());
  Operation *first = ops[r.start];
  OpBuilder b(first);
  SmallVector<Value> stacks;
  SmallVector<Type> sliceTypes;
  for (const SmallVector<ParamOp> &params : f.slices) {
    ParamOp q = params[0];
    auto t = cast<SymTensorType>(q.getType());
    auto stacked = ParamOp::create(b, q.getLoc(), t.stacked(count),
                                   b.getStringAttr(stackedName(params)),
                                   q.getKindAttr(), q.getGroupAttr());
    stacked->setDiscardableAttrs(q->getDiscardableAttrDictionary());
    if (ShardingAttr sh = getPlanSharding(q)) {
      // The layer dimension is whole on every rank.
      SmallVector<SmallVector<std::string>> dims{{}};
      for (unsigned d = 0; d < sh.getRank(); ++d)
        dims.push_back(sh.getDimAxes(d));
      setPlanSharding(stacked,
                      ShardingAttr::get(ctx, dims, sh.getPartialAxes()));
    }
    stacks.push_back(stacked);
    sliceTypes.push_back(t);
  }
  SmallVector<Type> carriedTypes;
  for (auto [pos, rn] : f.carried)
    carriedTypes.push_back(ops[r.start + pos]->getResult(rn).getType());
  auto rep =
      RepeatOp::create(b, first->getLoc(), carriedTypes,
                       ExprAttr::get(ctx, count), UnitAttr(), StringAttr(), f.inits, stacks);
  Block *body = new Block();
  rep.getBody().push_back(body);
  SmallVector<Value> carriedArgs, sliceArgs;
  for (Type t : carriedTypes)
    carriedArgs.push_back(body->addArgument(t, first->getLoc()));
  for (Type t : sliceTypes)
    sliceArgs.push_back(body->addArgument(t, first->getLoc()));

  IRMapping map;
  OpBuilder bb = OpBuilder::atBlockEnd(body);
  for (int64_t j = 0; j < r.period; ++j) {
    Operation *t = ops[r.start + j];
    if (auto it = f.innerParams.find(j); it != f.innerParams.end()) {
      map.map(t->getResult(0), sliceArgs[it->second]);
      continue;
    }
    Operation *copy = bb.clone(*t, map);
    for (auto [o, src] : llvm::enumerate(f.sources[j])) {
      Value v;
      switch (src.kind) {
      case Source::Internal:
        v = map.lookup(ops[r.start + src.position]->getResult(src.result));
        break;
      case Source::Carried:
        v = carriedArgs[src.position];
        break;
      case Source::Slice:
        v = sliceArgs[src.position];
        break;
      case Source::Shared:
        v = src.shared;
        break;
      }
      copy->setOperand(o, v);
    }
  }
  SmallVector<Value> yielded;
  for (auto [pos, rn] : f.carried)
    yielded.push_back(map.lookup(ops[r.start + pos]->getResult(rn)));
  YieldOp::create(bb, first->getLoc(), yielded);

  // The last layer's carried values are the repeat's results after the run.
  int64_t last = r.start + (r.count - 1) * r.period;
  for (auto [c, key] : llvm::enumerate(f.carried))
    ops[last + key.first]
        ->getResult(key.second)
        .replaceUsesWithIf(rep.getResult(c), [&](OpOperand &use) {
          Operation *owner = block.findAncestorOpInBlock(*use.getOwner());
          return owner != rep && index.lookup(owner) >= last + r.period;
        });
  // The layers' own parameters from before the run (those inside it go
  // with it).
  SmallVector<ParamOp> before;
  for (const SmallVector<ParamOp> &params : f.slices)
    for (ParamOp q : params)
      if (positionOf(q.getResult()) < r.start)
        before.push_back(q);
  for (int64_t i = r.start + r.covered() - 1; i >= r.start; --i) {
    if (!ops[i]->use_empty())
      return ops[i]->emitError("stage-fold-layers: still used after folding");
    ops[i]->erase();
  }
  for (ParamOp q : before)
    if (q->use_empty())
      q->erase();
  return success();
}

struct FoldLayersPass
    : public stage::impl::StageFoldLayersBase<FoldLayersPass> {
  using StageFoldLayersBase::StageFoldLayersBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (minLayers < 2) {
      emitOptionError(module)
          << "stage-fold-layers: min-layers must be at least 2, got "
          << int64_t(minLayers);
      return signalPassFailure();
    }
    FailureOr<sym::Bindings> bindings = getModuleBindings(module);
    if (failed(bindings))
      return signalPassFailure();
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      // One stack after another (a model may have two kinds of layers).
      while (true) {
        Folder folder(fn.getBody().front());
        std::optional<Fold> f = folder.best(minLayers);
        if (!f)
          break;
        std::string symbol = "L";
        for (int n = 2; bindings->count(symbol); ++n)
          symbol = "L" + std::to_string(n);
        if (failed(folder.apply(*f, symbol)))
          return signalPassFailure();
        (*bindings)[symbol] = f->run.count;
      }
    }
    setModuleBindings(module, *bindings);
  }
};
} // namespace
