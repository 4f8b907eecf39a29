//===- ShardingRules.cpp - The plan as logical-axis rules -----------------===//

#include "ShardingRules.h"

#include "Stage/Analysis/Bindings.h"

using namespace mlir;
using namespace mlir::stage;

static const std::pair<Role, const char *> kRoleNames[] = {
    {Role::None, "none"},         {Role::Layer, "layer"},
    {Role::Batch, "batch"},       {Role::Tokens, "tokens"},
    {Role::Seq, "seq"},           {Role::Heads, "heads"},
    {Role::KVHeads, "kv_heads"},  {Role::Ffn, "ffn"},
    {Role::Vocab, "vocab"},       {Role::Experts, "experts"},
};

const char *mlir::stage::getRoleName(Role r) {
  for (auto [role, name] : kRoleNames)
    if (role == r)
      return name;
  return "none";
}

std::optional<Role> mlir::stage::parseRole(StringRef name) {
  for (auto [role, n] : kRoleNames)
    if (name == n)
      return role;
  return std::nullopt;
}

/// The standard symbol names of the importers and of `stage-symbolize`.
static Role standardRole(StringRef s) {
  if (s == "L" || s == "Ld")
    return Role::Layer;
  if (s == "B")
    return Role::Batch;
  if (s == "S")
    return Role::Seq;
  // Attention heads; Mamba-2's heads and their groups (which share B and
  // C), split together as Megatron splits them (tp must divide G).
  if (s == "H" || s == "Hm" || s == "G")
    return Role::Heads;
  if (s == "KV" || s == "KVr")
    return Role::KVHeads;
  if (s == "F" || s == "Fe" || s == "Fs" || s == "Di") // Di: Mamba channels
    return Role::Ffn;
  if (s == "V")
    return Role::Vocab;
  if (s == "E")
    return Role::Experts;
  return Role::None;
}

Role ShardingRules::getRole(const sym::Expr &dim) const {
  // A dimension made of several symbols takes the role of its leading one
  // (`H*Dh` is heads); batch and sequence together are tokens.
  bool batch = false, seq = false;
  Role first = Role::None;
  for (const sym::Expr::Term &t : dim.terms())
    for (const auto &[name, exp] : t.mono.factors()) {
      if (exp <= 0)
        continue;
      auto it = plan.symbolRoles.find(name);
      Role r = it != plan.symbolRoles.end() ? it->second : standardRole(name);
      batch |= r == Role::Batch;
      seq |= r == Role::Seq;
      if (first == Role::None)
        first = r;
    }
  if (batch && seq)
    return Role::Tokens;
  if (dim.terms().size() > 1)
    return Role::None; // a sum (Dn + Dr) has no single role
  return first;
}

SmallVector<Role> ShardingRules::getRoles(SymTensorType t) const {
  SmallVector<Role> roles;
  for (unsigned d = 0; d < t.getRank(); ++d)
    roles.push_back(d == 0 && layerCounts.count(t.getDim(0))
                        ? Role::Layer
                        : getRole(t.getDim(d)));
  return roles;
}

SmallVector<std::string> ShardingRules::axesFor(Role r, bool tokenIds) const {
  auto it = plan.overrides.find(r);
  SmallVector<std::string> axes;
  if (it != plan.overrides.end()) {
    axes = it->second;
  } else {
    switch (r) {
    case Role::Batch:
      axes = {"dp", "ep"};
      break;
    case Role::Tokens:
      axes = {"dp", "ep", "cp"};
      if (plan.sequenceParallel && !tokenIds)
        axes.push_back("tp");
      break;
    case Role::Seq:
      axes = {"cp"};
      // Megatron sequence parallelism: activations between tensor-parallel
      // regions are split along the sequence; token ids are not activations.
      if (plan.sequenceParallel && !tokenIds)
        axes.push_back("tp");
      break;
    case Role::Heads:
    case Role::Ffn:
    case Role::Vocab:
      axes = {"tp"};
      break;
    case Role::KVHeads:
      if (!replicateKV)
        axes = {"tp"};
      break;
    case Role::Experts:
      axes = {"ep"};
      break;
    default:
      break;
    }
  }
  SmallVector<std::string> active;
  for (const std::string &a : axes)
    if (plan.degreeOf(a) > 1)
      active.push_back(a);
  return active;
}

/// Which roles compete first for an axis: tensor parallelism splits heads,
/// ffn and vocabulary before the sequence; expert parallelism splits experts
/// before tokens.
static int rolePriority(Role r) {
  switch (r) {
  case Role::Experts:
  case Role::Heads:
  case Role::KVHeads:
  case Role::Ffn:
  case Role::Vocab:
    return 0;
  case Role::Batch:
  case Role::Tokens:
    return 1;
  case Role::Seq:
    return 2;
  default:
    return 3;
  }
}

ShardingAttr ShardingRules::getDesired(SymTensorType t, bool tokenIds) const {
  unsigned rank = t.getRank();
  SmallVector<Role> roles = getRoles(t);
  // Experts split only expert-major tensors (weights [E, ...], buffers
  // [E, C, D]); a router's [.., E] scores and its [E] bias (DeepSeek-V3's
  // score correction) stay with the tokens.
  for (unsigned d = 0; d < rank; ++d)
    if (roles[d] == Role::Experts) {
      bool leading = d == 0 || (d == 1 && roles[0] == Role::Layer);
      if (!leading || d + 1 == rank)
        roles[d] = Role::None;
    }
  SmallVector<SmallVector<std::string>> dims(rank);
  for (const std::string &axis : plan.axes) {
    if (plan.degreeOf(axis) <= 1)
      continue;
    int best = -1;
    for (unsigned d = 0; d < rank; ++d) {
      SmallVector<std::string> want = axesFor(roles[d], tokenIds);
      if (!llvm::is_contained(want, axis))
        continue;
      if (best < 0 || rolePriority(roles[d]) < rolePriority(roles[best]))
        best = d;
    }
    if (best >= 0)
      dims[best].push_back(axis);
  }
  return getCanonicalSharding(t.getContext(), dims, {});
}

SmallVector<std::string>
ShardingRules::getDataAxes(ShardingAttr weight) const {
  bool expert = llvm::is_contained(weight.getSplitAxes(), "ep");
  SmallVector<std::string> axes;
  for (const std::string &a : plan.axes) {
    if (plan.degreeOf(a) <= 1)
      continue;
    if (a == "dp" || a == "cp" || (a == "ep" && !expert))
      axes.push_back(a);
  }
  return axes;
}

FailureOr<ShardingAttr>
ShardingRules::getZeroSharding(Location loc, SymTensorType t,
                               ShardingAttr s) const {
  SmallVector<std::string> group = getDataAxes(s);
  // ZeRO shards over the data-parallel group; cp and ep are part of it.
  int64_t n = 1;
  for (const std::string &a : group)
    n *= plan.degreeOf(a);
  if (n == 1)
    return s;
  SmallVector<Role> roles = getRoles(t);
  for (unsigned d = 0; d < t.getRank(); ++d) {
    if (roles[d] == Role::Layer)
      continue;
    sym::Result<sym::Rational> extent =
        t.getDim(d).divExact(s.getSplitFactor(d)).evaluateRational(plan.bindings);
    if (!extent || !extent->isInteger())
      continue;
    std::optional<int64_t> e = extent->toInt64();
    if (!e || *e % n != 0)
      continue;
    SmallVector<SmallVector<std::string>> dims;
    for (unsigned i = 0; i < t.getRank(); ++i)
      dims.push_back(s.getDimAxes(i));
    // The ZeRO partition is the innermost split, so gathering it keeps the
    // model-parallel split of the same dimension.
    dims[d].append(group.begin(), group.end());
    return getCanonicalSharding(t.getContext(), dims, {});
  }
  std::string shape;
  for (unsigned d = 0; d < t.getRank(); ++d)
    shape += (d ? ", " : "") + t.getDim(d).str();
  return emitError(loc) << "ZeRO cannot partition a weight of shape [" << shape
                        << "] evenly: no dimension is divisible by the "
                        << n << " ranks of its data-parallel group";
}

double ShardingRules::getBytes(SymTensorType t) const {
  sym::Result<sym::Rational> v = t.getSizeInBytes().evaluateRational(plan.bindings);
  return v ? v->toDouble() : 0.0;
}

FailureOr<ShardingRules> ShardingRules::create(ModuleOp module,
                                               ParallelPlan plan) {
  ShardingRules rules(std::move(plan));
  module.walk([&](RepeatOp rep) {
    rules.layerCounts.insert(rep.getCount().getValue());
    // Sizes in a decode step depend on its index: the plan weighs them at
    // the middle step.
    if (std::optional<StringRef> step = rep.getStep())
      if (sym::Result<int64_t> n =
              rep.getCount().getValue().evaluate(rules.plan.bindings))
        rules.plan.bindings[step->str()] = *n / 2;
  });
  int64_t tp = rules.plan.degreeOf("tp");
  auto kv = rules.plan.bindings.find("KV");
  // Serving replaces KV by KVr (one KV head per rank) when tp exceeds it.
  bool usesKV = false;
  module.walk([&](ParamOp p) {
    for (const sym::Expr &d : cast<SymTensorType>(p.getType()).getDims())
      usesKV |= d.symbols().count("KV") > 0;
  });
  if (tp > 1 && usesKV && kv != rules.plan.bindings.end() &&
      kv->second % tp != 0) {
    if (tp % kv->second != 0) {
      // The error points at the first weight with kv heads.
      Operation *at = module;
      module.walk([&](ParamOp p) {
        if (at != module.getOperation())
          return;
        for (const sym::Expr &d : cast<SymTensorType>(p.getType()).getDims())
          if (rules.getRole(d) == Role::KVHeads)
            at = p;
      });
      return at->emitError("KV/tp = ")
             << kv->second << "/" << tp
             << " is not an integer, and tp is no multiple of the kv heads "
                "either: tp must divide KV or be a multiple of it";
    }
    // Megatron: more tensor-parallel ranks than kv heads replicates them.
    rules.replicateKV = true;
  }
  return rules;
}
