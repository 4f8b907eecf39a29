//===- ContinuousBatching.cpp - Mixed prefill and decode iterations -------===//

#include "ServeProgram.h"

#include "Stage/Dialect/Stage/IR/StageBuilder.h"

using namespace mlir;
using namespace mlir::stage;
using sym::Expr;

/// Continuous batching with chunked prefill: the decode region holds J =
/// S/C mixed iterations. Each runs the projections and MLPs on B + C tokens
/// at once (one token of each running request, then chunk j of an arriving
/// prompt); attention is split by part: the B decode tokens attend to
/// their caches of T + 1 positions, the chunk causally to the (j + 1) C
/// positions of its prompt so far. Only the decode tokens are sampled; in
/// a pipeline they go back to the first stage.
LogicalResult mlir::stage::buildMixedIterations(ServeOp serve,
                                                ForwardProgram &f,
                                                const ServeOptions &o,
                                                GridOp grid) {
  Location loc = serve.getLoc();
  RepeatOp loop =
      createStepLoop(serve.getDecode(), loc, Expr::symbol("J"), "j");
  // One flattened batch of B + C tokens (through a fresh symbol, so that
  // the B of B + C is not replaced by the 1).
  Expr B = Expr::symbol("B"), C = Expr::symbol("C");
  IRMapping map;
  YieldOp yield = cloneForward(
      loop.getBodyBlock(), f, map,
      {{{"B", Expr(1)}, {"S", Expr::symbol("stage.tokens")}},
       {{"stage.tokens", B + C}}});
  Expr T = Expr::symbol("T"), j = Expr::symbol("j");
  for (CachedAttention &cached : f.attentions) {
    auto a = cast<AttentionOp>(map.lookup(cached.op.getOperation()));
    OpBuilder b(a);
    GraphBuilder g(b, a.getLoc());
    auto part = [&](Value v, bool decode) {
      Value p = decode ? g.slice(v, 1, Expr(0), B) : g.slice(v, 1, B, C);
      if (!decode)
        return p;
      SmallVector<Expr> dims = GraphBuilder::typeOf(p).getDims();
      std::swap(dims[0], dims[1]); // [1, B, ...] -> [B, 1, ...]
      return g.reshape(p, dims);
    };
    auto write = [&](Value v, StringRef name, const Expr &offset,
                     ExprAttr window) {
      return writeToCache(b, a.getLoc(), v, name, offset, window);
    };
    // A running request reads its cache, the last W positions of it under
    // a sliding window; a prompt chunk attends over its whole prefix.
    ExprAttr window = a.getWindowAttr();
    Value q = a.getQuery(), k = a.getKey(), v = a.getValue();
    Value decoded = g.attention(
        part(q, true), write(part(k, true), cached.keyCache, T, window),
        write(part(v, true), cached.valueCache, T, window),
        /*causal=*/false, std::nullopt, a.getSoftcap());
    Value chunk = g.attention(
        part(q, false), write(part(k, false), cached.keyCache, j * C, {}),
        write(part(v, false), cached.valueCache, j * C, {}),
        /*causal=*/true, std::nullopt, a.getSoftcap());
    SmallVector<Expr> dims = GraphBuilder::typeOf(decoded).getDims();
    std::swap(dims[0], dims[1]);
    Value joined = g.concat({g.reshape(decoded, dims), chunk}, 1);
    a.replaceAllUsesWith(joined);
    a.erase();
  }
  bool last = bool(f.head);
  if (f.tokens && o.pipelined) {
    // The running requests' tokens come back from the last stage; the
    // chunk's are the prompt's.
    auto tokens = cast<InputOp>(map.lookup(f.tokens.getOperation()));
    OpBuilder rb(tokens);
    GraphBuilder g(rb, loc);
    Type i32 = rb.getI32Type();
    Value r = receiveToken(rb, loc, g.tensor({Expr(1), B}, i32), grid);
    Value prompt = g.input("prompt_chunk", {Expr(1), C}, i32);
    tokens.replaceAllUsesWith(g.concat({r, prompt}, 1));
    tokens.erase();
  }
  if (last) {
    FailureOr<Value> token =
        sampleToken(cast<EinsumOp>(map.lookup(f.head.getOperation())),
                    map.lookup(f.logits), SampledPositions{B + C, Expr(0), B});
    if (failed(token))
      return failure();
    if (o.pipelined) {
      OpBuilder at(yield);
      sendToken(at, loc, *token, grid);
    }
  }
  return success();
}
