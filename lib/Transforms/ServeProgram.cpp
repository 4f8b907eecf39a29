//===- ServeProgram.cpp - Building blocks of serving programs -------------===//

#include "ServeProgram.h"

#include "Stage/Dialect/Stage/IR/StageTypeRewriting.h"

#include "Stage/Analysis/ParameterAnalysis.h"
#include "Stage/Dialect/Stage/IR/StageAnnotations.h"
#include "Stage/Dialect/Stage/IR/StageBuilder.h"

#include <set>

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

/// The name of the cache a key or value goes to: its projection's weight
/// without `_proj` ("layers.self_attn.k"), else `attention<n>.<kind>`.
static std::string cacheName(Value v, size_t index, StringRef kind,
                             std::set<std::string> &used) {
  std::string name;
  for (Operation *def = v.getDefiningOp(); def && name.empty();) {
    if (auto e = dyn_cast<EinsumOp>(def)) {
      for (Value in : e.getInputs())
        if (ParamOp p = getSourceParam(in)) {
          name = p.getName().str();
          break;
        }
      break;
    }
    if (def->getNumOperands() == 0)
      break;
    def = def->getOperand(0).getDefiningOp();
  }
  if (StringRef(name).ends_with("_proj"))
    name.resize(name.size() - 5);
  if (name.empty() || used.count(name))
    name = "attention" + std::to_string(index) + "." + kind.str();
  used.insert(name);
  return name;
}

/// The name of a recurrence's state cache: its layer's weights' prefix
/// ("layers.mixer.ssm_state", "layers.mixer.conv1d[x].state"), else
/// `state<n>`.
static std::string stateName(Operation *op, size_t index,
                             std::set<std::string> &used) {
  std::string name;
  if (auto conv = dyn_cast<Conv1dOp>(op)) {
    if (ParamOp p = getSourceParam(conv.getWeight()))
      name = (p.getName() + ".state").str();
  } else if (ParamOp p = getSourceParam(cast<SsmScanOp>(op).getA())) {
    name = (p.getName().rsplit('.').first + ".ssm_state").str();
  }
  if (name.empty() || used.count(name))
    name = "state" + std::to_string(index);
  used.insert(name);
  return name;
}

/// The op that computed `v` before elementwise ops of one operand (a
/// scale, a mask, a soft cap) and, with `biases`, the addition of a weight.
static Operation *beforeElementwise(Value v, bool biases) {
  auto skipped = [&](Operation *op) {
    if (!isa<EwiseOp>(op))
      return false;
    return op->getNumOperands() == 1 ||
           (biases && op->getNumOperands() == 2 &&
            isa_and_nonnull<ParamOp>(op->getOperand(1).getDefiningOp()));
  };
  Operation *def = v.getDefiningOp();
  while (def && skipped(def))
    def = def->getOperand(0).getDefiningOp();
  return def;
}

/// Whether `sm` normalizes attention scores: a softmax of a product of two
/// activations (q k^T), perhaps scaled or masked first; a router's softmax
/// is of a product with a weight.
static bool isAttentionScores(SoftmaxOp sm) {
  auto scores = dyn_cast_or_null<EinsumOp>(
      beforeElementwise(sm->getOperand(0), /*biases=*/false));
  return scores && scores.getInputs().size() == 2 &&
         llvm::none_of(scores.getInputs(),
                       [](Value v) { return bool(getSourceParam(v)); });
}

/// Reads the forward graph: which ops move into the serving regions, its
/// attentions, its prompt tokens and its LM head. Removes the loss.
FailureOr<ForwardProgram> mlir::stage::readForward(Block &body,
                                                   Operation *terminator) {
  ForwardProgram f;
  f.latents = splitLatentAttentions(body);
  CrossEntropyOp ce;
  bool softmax = false;
  for (Operation &op : body.without_terminator()) {
    if (isa<MicrobatchesOp, OptimizerStepOp, ServeOp>(op))
      return op.emitOpError("is already part of a training or serving "
                            "program");
    if (auto p = dyn_cast<ParamOp>(op)) {
      if (p.getKind() != ParamKind::weight && p.getKind() != ParamKind::buffer)
        return p.emitOpError("is an optimizer state: serving takes a forward "
                             "graph");
      continue;
    }
    if (auto c = dyn_cast<CrossEntropyOp>(op))
      ce = c;
    if (auto in = dyn_cast<InputOp>(op); in && in.getName() == "tokens")
      f.tokens = in;
    f.ops.push_back(&op);
  }
  std::set<std::string> used;
  body.walk([&](Operation *op) {
    if (auto sm = dyn_cast<SoftmaxOp>(op))
      softmax |= isAttentionScores(sm);
    if (isa<SsmScanOp, Conv1dOp>(op)) {
      f.states.push_back({op, stateName(op, f.states.size(), used)});
      return;
    }
    if (auto a = dyn_cast<AttentionOp>(op)) {
      size_t n = f.attentions.size();
      auto l = llvm::find_if(
          f.latents, [&](const LatentAttention &l) { return l.op == a; });
      if (l == f.latents.end()) {
        f.attentions.push_back({a, cacheName(a.getKey(), n, "k", used),
                                cacheName(a.getValue(), n, "v", used)});
        return;
      }
      // The latent's cache sits next to the attention's weights.
      std::string name;
      if (ParamOp p = getSourceParam(l->keyUp)) {
        StringRef w = p.getName();
        w = w.rsplit('.').first; // the split-off part
        name = (w.rsplit('.').first + ".kv_latent").str();
      }
      if (name.empty() || used.count(name))
        name = "attention" + std::to_string(n) + ".kv_latent";
      used.insert(name);
      f.attentions.push_back({a, name, "", int(l - f.latents.begin())});
    }
  });
  if (f.attentions.empty() && softmax)
    return terminator->emitError(
        "stage-serve: the attention is unfused (a softmax of einsums); a KV "
        "cache needs stage.attention: import with --attention=fused");
  if (ce) {
    // The logits: an einsum with a weight, perhaps through elementwise ops
    // (a scale, a soft cap) and the addition of a bias.
    Value logits = ce.getLogits();
    auto head = dyn_cast_or_null<EinsumOp>(
        beforeElementwise(logits, /*biases=*/true));
    if (!head || head.getInputs().size() != 2)
      return ce.emitOpError("reads logits that are not an einsum with the LM "
                            "head weight; stage-serve cannot sample from them");
    f.head = head;
    f.logits = logits;
    // The loss goes, with what only it read (the labels); a function
    // returning it returns nothing.
    SmallVector<Operation *> dead;
    for (Operation *user : ce->getUsers())
      if (user != terminator)
        dead.push_back(user);
    dead.push_back(ce);
    Value labels = ce.getLabels();
    for (OpOperand &use : llvm::make_early_inc_range(ce->getUses()))
      if (use.getOwner() == terminator)
        terminator->eraseOperand(use.getOperandNumber());
    for (Operation *op : dead) {
      llvm::erase(f.ops, op);
      op->dropAllUses();
      op->erase();
    }
    if (Operation *l = labels.getDefiningOp(); l && l->use_empty()) {
      llvm::erase(f.ops, l);
      l->erase();
    }
  }
  for (Operation *op : f.ops)
    if (isa<LossOp, CrossEntropyOp>(op))
      return op->emitOpError("is part of the loss: stage-serve removes the "
                             "loss with its cross-entropy only");
  return f;
}

/// The cache of one attention's keys or values (entries of `entry` dims,
/// positions at 1): S + N positions (S without decode steps, which context
/// parallelism splits; W for sliding-window attention, a ring of the last
/// W positions), stacked over the layer stacks it runs in.
/// `dims` stacked over the layer stacks `op` runs in (at least one).
static SymTensorType stacked(Operation *op, ArrayRef<Expr> dims,
                             Type elementType, Operation *program) {
  SmallVector<Expr> stack;
  for (Operation *p = op->getParentOp(); p && p != program;
       p = p->getParentOp())
    if (auto rep = dyn_cast<RepeatOp>(p))
      stack.insert(stack.begin(), rep.getCount().getValue());
  if (stack.empty())
    stack.push_back(Expr(1));
  stack.append(dims.begin(), dims.end());
  return SymTensorType::get(op->getContext(), stack, elementType);
}

SymTensorType mlir::stage::cacheType(AttentionOp a, ArrayRef<Expr> entry,
                                     Type elementType, Operation *program,
                                     bool decodes) {
  SmallVector<Expr> dims(entry.begin(), entry.end());
  if (a.getWindow())
    dims[1] = a.getWindow()->getValue();
  else
    dims[1] =
        decodes ? Expr::symbol("S") + Expr::symbol("N") : Expr::symbol("S");
  return stacked(a, dims, elementType, program);
}

SymTensorType mlir::stage::stateCacheType(Operation *recurrence,
                                          Operation *program) {
  auto x = cast<SymTensorType>(recurrence->getOperand(0).getType());
  SmallVector<Expr> dims = {x.getDim(0)};
  for (unsigned d = 2; d < x.getRank(); ++d)
    dims.push_back(x.getDim(d));
  if (auto conv = dyn_cast<Conv1dOp>(recurrence)) {
    SymTensorType w = conv.getWeight().getType();
    dims.push_back(w.getDim(w.getRank() - 1) - Expr(1));
  } else {
    SymTensorType b = cast<SsmScanOp>(recurrence).getB().getType();
    dims.push_back(b.getDim(b.getRank() - 1));
  }
  return stacked(recurrence, dims, x.getElementType(), program);
}

void mlir::stage::carryStates(const ForwardProgram &f, IRMapping &map) {
  for (const CarriedState &s : f.states) {
    Operation *op = map.lookup(s.op);
    op->setAttr("state", StringAttr::get(op->getContext(), s.cache));
  }
}

/// Writes the keys and values of every attention of the forward graph (its
/// clone in a region, through `map`) into their caches at `offset`, and
/// lets attention read the cache so far; a decode step's latent attention
/// takes the absorbed form.
Value mlir::stage::writeToCache(OpBuilder &b, Location loc, Value v,
                                StringRef name, const Expr &offset,
                                ExprAttr window) {
  auto t = cast<SymTensorType>(v.getType());
  SmallVector<Expr> dims = t.getDims();
  dims[1] = window ? window.getValue() : offset + dims[1];
  return CacheWriteOp::create(b, loc, t.withDims(dims), v, name, 1,
                              ExprAttr::get(b.getContext(), offset), window);
}

void mlir::stage::writeCaches(ForwardProgram &f, IRMapping &map,
                              const Expr &offset, bool decode) {
  for (CachedAttention &cached : f.attentions) {
    auto a = cast<AttentionOp>(map.lookup(cached.op.getOperation()));
    OpBuilder b(a);
    // A decode step reads the window's positions; the prompt attends over
    // its own keys (the ring keeps their last W).
    ExprAttr window = decode ? a.getWindowAttr() : ExprAttr();
    auto write = [&](Value v, StringRef name) {
      return writeToCache(b, a.getLoc(), v, name, offset, window);
    };
    if (cached.latent >= 0) {
      const LatentAttention &l = f.latents[cached.latent];
      LatentAttention m{a,
                        map.lookupOrDefault(l.queryNope),
                        map.lookupOrDefault(l.queryRope),
                        map.lookupOrDefault(l.latent),
                        map.lookupOrDefault(l.keyRope),
                        map.lookupOrDefault(l.keyUp),
                        map.lookupOrDefault(l.valueUp)};
      Value view = write(buildLatentEntry(b, a.getLoc(), m.latent, m.keyRope),
                         cached.keyCache);
      // The prompt's attention runs on its own keys and values.
      if (decode)
        absorbLatentAttention(a, m, view);
      continue;
    }
    for (auto [index, name] :
         {std::pair<unsigned, StringRef>{1, cached.keyCache},
          {2, cached.valueCache}})
      a->setOperand(index, write(a->getOperand(index), name));
    // One new position attends to all cached ones.
    if (decode)
      a.setCausal(false);
  }
}

/// Greedy sampling after the (cloned) LM head: a top-1 over the vocabulary,
/// the token ids. With `window`, the head first takes those positions only
/// (a prompt's last, a mixed batch's decode tokens).
FailureOr<Value>
mlir::stage::sampleToken(EinsumOp head, Value logits,
                         std::optional<SampledPositions> window) {
  OpBuilder b(head);
  GraphBuilder g(b, head.getLoc());
  if (window) {
    int activation = getSourceParam(head.getInputs()[0]) ? 1 : 0;
    Value x = head.getInputs()[activation];
    auto xt = cast<SymTensorType>(x.getType());
    // getDims() builds a vector: one copy to search and measure.
    SmallVector<Expr> xDims = xt.getDims();
    auto seq = llvm::find(xDims, window->extent);
    if (seq == xDims.end())
      return head.emitOpError("stage-serve: the LM head's input ")
             << xt << " has no dimension " << window->extent.str();
    int64_t dim = seq - xDims.begin();
    head->setOperand(activation, g.slice(x, dim, window->offset, window->size));
    // The head and the elementwise ops after it see those positions only.
    for (Operation *op = logits.getDefiningOp();;
         op = op->getOperand(0).getDefiningOp()) {
      auto t = cast<SymTensorType>(op->getResult(0).getType());
      SmallVector<Expr> dims = t.getDims();
      dims[dim] = window->size;
      op->getResult(0).setType(t.withDims(dims));
      if (op == head.getOperation())
        break;
    }
  }
  b.setInsertionPointAfter(logits.getDefiningOp());
  auto lt = cast<SymTensorType>(logits.getType());
  Type i32 = b.getI32Type();
  auto [weights, ids] = g.topk(logits, Expr(1), lt.getElementType());
  (void)weights;
  SmallVector<Expr> dims = lt.getDims();
  dims.pop_back();
  Value token = g.reshape(ids, dims);
  if (cast<SymTensorType>(token.getType()).getElementType() != i32)
    token = g.cast(token, i32);
  return token;
}

YieldOp mlir::stage::cloneForward(Block &block, const ForwardProgram &f,
                                  IRMapping &map,
                                  ArrayRef<sym::Substitution> substitutions) {
  OpBuilder b = OpBuilder::atBlockEnd(&block);
  for (Operation *op : f.ops)
    b.clone(*op, map);
  for (const sym::Substitution &s : substitutions)
    for (Operation &op : block)
      substituteSymbols(&op, s);
  return YieldOp::create(b, block.getParentOp()->getLoc());
}

RepeatOp mlir::stage::createStepLoop(
    Region &region, Location loc, const Expr &count, StringRef step,
    ArrayRef<std::pair<StringRef, Type>> carried) {
  Block *block = new Block();
  region.push_back(block);
  OpBuilder b = OpBuilder::atBlockEnd(block);
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> inits;
  for (auto [name, type] : carried)
    inits.push_back(InputOp::create(b, loc, type, name));
  auto loop = RepeatOp::create(b, loc, ValueRange(inits).getTypes(),
                               ExprAttr::get(ctx, count), UnitAttr(),
                               StringAttr::get(ctx, step), inits, ValueRange{});
  Block *body = new Block();
  loop.getBody().push_back(body);
  for (Value init : inits)
    body->addArgument(init.getType(), loc);
  YieldOp::create(b, loc);
  return loop;
}

SendOp mlir::stage::sendToken(OpBuilder &b, Location loc, Value token,
                              GridOp grid) {
  auto s = SendOp::create(b, loc, token, FlatSymbolRefAttr::get(grid),
                          b.getStrArrayAttr({"pp"}), b.getI64IntegerAttr(1),
                          b.getI64IntegerAttr(kTokenChannel));
  markTokenFeedback(s);
  return s;
}

RecvOp mlir::stage::receiveToken(OpBuilder &b, Location loc, Type type,
                                 GridOp grid) {
  auto r = RecvOp::create(b, loc, type, FlatSymbolRefAttr::get(grid),
                          b.getStrArrayAttr({"pp"}), b.getI64IntegerAttr(-1),
                          b.getI64IntegerAttr(kTokenChannel));
  markTokenFeedback(r);
  return r;
}
