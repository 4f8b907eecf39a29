//===- SSMBlocks.cpp - Mamba and Mamba-2 mixers ---------------------------===//
//
// The mixers of state-space layers, as HF's MambaMixer and Mamba2Mixer (and
// Jamba's) compute them. Projections that the checkpoint fuses (in_proj,
// x_proj, Mamba-2's conv1d) are built as their parts, named `in_proj[x]`
// and so on, so that each part splits over tensor-parallel ranks by its
// own dimensions (channels, heads, groups), as Megatron's Mamba layers do.
//
//===----------------------------------------------------------------------===//

#include "LayerScope.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::models;
using sym::Expr;
using symbols::S;

/// softplus(x) = log(1 + exp(x)): exp, add, log.
static constexpr int64_t kSoftplusFlops = 3;

/// Mamba: in_proj to x and the gate z, a causal convolution and SiLU on x,
/// x_proj to the low-rank dt and to B and C, dt_proj, the selective scan
/// over N states per channel, the skip D x, the gate, out_proj.
static Value buildMamba1(LayerScope &scope, const ModelConfig &c, Value h) {
  GraphBuilder &g = scope.body();
  const SSMConfig &m = *c.ssm;
  Expr D = S("D"), Di = S("Di"), N = S("Ns"), R = S("R"), Kc = S("Kc");
  auto project = [&](StringRef name, Value in, StringRef spec, Expr from,
                     Expr to, bool bias) {
    Value w = scope.weight(name, {from, to}, "ssm");
    Value y = g.einsum(spec, {in, w});
    return addBias(scope, y, (name + ".bias").str(), {to}, "ssm", bias);
  };
  Value x = project("mixer.in_proj[x]", h, "bsd,de->bse", D, Di, m.projBias);
  Value z = project("mixer.in_proj[z]", h, "bsd,de->bse", D, Di, m.projBias);
  Value conv = g.conv1d(x, scope.weight("mixer.conv1d", {Di, Kc}, "ssm"));
  conv = addBias(scope, conv, "mixer.conv1d.bias", {Di}, "ssm", m.convBias);
  x = g.ewise(EwiseKind::silu, {conv});
  Value dt = project("mixer.x_proj[dt]", x, "bse,er->bsr", Di, R, false);
  Value b = project("mixer.x_proj[B]", x, "bse,en->bsn", Di, N, false);
  Value cc = project("mixer.x_proj[C]", x, "bse,en->bsn", Di, N, false);
  if (m.innerNorms) {
    auto weight = [&](StringRef name, const Expr &n) {
      return m.innerNormWeights ? scope.weight(name, {n}, "ssm") : Value();
    };
    dt = g.norm(NormKind::rms, dt, weight("mixer.dt_layernorm", R));
    b = g.norm(NormKind::rms, b, weight("mixer.b_layernorm", N));
    cc = g.norm(NormKind::rms, cc, weight("mixer.c_layernorm", N));
  }
  dt = project("mixer.dt_proj", dt, "bsr,re->bse", R, Di, true);
  dt = g.generic({dt}, kSoftplusFlops);
  // The kernel takes A_log (A = -exp(A_log)) and the skip D.
  Value y = g.ssmScan(x, dt, scope.weight("mixer.A_log", {Di, N}, "ssm"), b,
                      cc, scope.weight("mixer.D", {Di}, "ssm"));
  y = g.ewise(EwiseKind::mul, {y, g.ewise(EwiseKind::silu, {z})});
  return project("mixer.out_proj", y, "bse,ed->bsd", Di, D, m.projBias);
}

/// A causal convolution of `v` by the weight `name` (`channels` x Kc taps,
/// a bias when `bias`), then SiLU: Mamba-2's and Gated DeltaNet's.
static Value convolveSilu(LayerScope &scope, const std::string &name, Value v,
                          ArrayRef<Expr> channels, bool bias) {
  GraphBuilder &g = scope.body();
  SmallVector<Expr> taps(channels.begin(), channels.end());
  taps.push_back(S("Kc"));
  Value y = g.conv1d(v, scope.weight(name, taps, "ssm"));
  y = addBias(scope, y, name + ".bias", channels, "ssm", bias);
  return g.ewise(EwiseKind::silu, {y});
}

/// Mamba-2: in_proj to the gate z, x (heads of P channels), B and C (G
/// groups of N) and dt (one per head); a causal convolution and SiLU on x,
/// B and C; the chunked scan; the skip D x; the gated RMS norm; out_proj.
static Value buildMamba2(LayerScope &scope, const ModelConfig &c, Value h) {
  GraphBuilder &g = scope.body();
  const SSMConfig &m = *c.ssm;
  // One group of B and C is every head's: every tensor-parallel rank
  // computes it (as vLLM's Mamba-2 does; Megatron needs tp to divide G).
  Expr G = m.groups == 1 ? Expr(1) : S("G");
  Expr D = S("D"), Hm = S("Hm"), P = S("P"), N = S("Ns");
  auto project = [&](StringRef part, StringRef spec, ArrayRef<Expr> to) {
    std::string name = ("mixer.in_proj[" + part + "]").str();
    SmallVector<Expr> dims{D};
    dims.append(to.begin(), to.end());
    Value y = g.einsum(spec, {h, scope.weight(name, dims, "ssm")});
    return addBias(scope, y, name + ".bias", to, "ssm", m.projBias);
  };
  auto convolve = [&](StringRef part, Value v, ArrayRef<Expr> channels) {
    return convolveSilu(scope, ("mixer.conv1d[" + part + "]").str(), v,
                        channels, m.convBias);
  };
  Value z = project("z", "bsd,dhp->bshp", {Hm, P});
  Value x = project("x", "bsd,dhp->bshp", {Hm, P});
  Value b = project("B", "bsd,dgn->bsgn", {G, N});
  Value cc = project("C", "bsd,dgn->bsgn", {G, N});
  Value dt = project("dt", "bsd,dh->bsh", {Hm});
  x = convolve("x", x, {Hm, P});
  b = convolve("B", b, {G, N});
  cc = convolve("C", cc, {G, N});
  dt =
      g.ewise(EwiseKind::add, {dt, scope.weight("mixer.dt_bias", {Hm}, "ssm")});
  dt = g.generic({dt}, kSoftplusFlops);
  // A_log and D: one value per head.
  Value y = g.ssmScan(x, dt, scope.weight("mixer.A_log", {Hm}, "ssm"), b, cc,
                      scope.weight("mixer.D", {Hm}, "ssm"), Expr::symbol("Q"));
  y = g.ewise(EwiseKind::mul, {y, g.ewise(EwiseKind::silu, {z})});
  // The gated RMS norm: its weight covers every channel of the layer.
  y = g.ewise(EwiseKind::mul, {g.norm(NormKind::rms, y),
                               scope.weight("mixer.norm", {Hm, P}, "ssm")});
  Value wo = scope.weight("mixer.out_proj", {Hm, P, D}, "ssm");
  Value out = g.einsum("bshp,hpd->bsd", {y, wo});
  return addBias(scope, out, "mixer.out_proj.bias", {D}, "ssm", m.projBias);
}

/// Gated DeltaNet (Qwen3-Next's linear attention): in_proj_qkvz to the
/// queries and keys (G key heads of N), the values and the gate z (Hm value
/// heads of P), in_proj_ba to beta and the decay's input (one per value
/// head); a causal convolution and SiLU on q, k and v; q and k normalized
/// (the kernel's L2 norm); beta = sigmoid(b), the decay softplus(a +
/// dt_bias) with A_log; the delta rule; the gated RMS norm (a weight of P,
/// shared by the heads); out_proj.
static Value buildGatedDeltaNet(LayerScope &scope, const ModelConfig &c,
                                Value h) {
  GraphBuilder &g = scope.body();
  const SSMConfig &m = *c.ssm;
  Expr D = S("D"), Hm = S("Hm"), P = S("P"), G = S("G"), N = S("Ns");
  auto project = [&](StringRef name, StringRef spec, ArrayRef<Expr> to) {
    SmallVector<Expr> dims{D};
    dims.append(to.begin(), to.end());
    return g.einsum(spec, {h, scope.weight(name, dims, "ssm")});
  };
  auto convolve = [&](StringRef part, Value v, ArrayRef<Expr> channels) {
    return convolveSilu(scope, ("linear_attn.conv1d[" + part + "]").str(), v,
                        channels, m.convBias);
  };
  Value q = project("linear_attn.in_proj_qkvz[q]", "bsd,dgn->bsgn", {G, N});
  Value k = project("linear_attn.in_proj_qkvz[k]", "bsd,dgn->bsgn", {G, N});
  Value v = project("linear_attn.in_proj_qkvz[v]", "bsd,dhp->bshp", {Hm, P});
  Value z = project("linear_attn.in_proj_qkvz[z]", "bsd,dhp->bshp", {Hm, P});
  Value b = project("linear_attn.in_proj_ba[b]", "bsd,dh->bsh", {Hm});
  Value a = project("linear_attn.in_proj_ba[a]", "bsd,dh->bsh", {Hm});
  q = g.norm(NormKind::rms, convolve("q", q, {G, N}));
  k = g.norm(NormKind::rms, convolve("k", k, {G, N}));
  v = convolve("v", v, {Hm, P});
  Value beta = g.ewise(EwiseKind::sigmoid, {b});
  Value dt = g.ewise(EwiseKind::add,
                     {a, scope.weight("linear_attn.dt_bias", {Hm}, "ssm")});
  dt = g.generic({dt}, kSoftplusFlops);
  Value y = g.ssmScan(v, dt, scope.weight("linear_attn.A_log", {Hm}, "ssm"), k,
                      q, beta, Expr::symbol("Q"), /*delta=*/true);
  y = g.ewise(EwiseKind::mul,
              {g.norm(NormKind::rms, y, scope.weight("linear_attn.norm", {P}, "ssm")),
               g.ewise(EwiseKind::silu, {z})});
  Value wo = scope.weight("linear_attn.out_proj", {Hm, P, D}, "ssm");
  return g.einsum("bshp,hpd->bsd", {y, wo});
}

Value mlir::stage::models::buildMamba(LayerScope &scope,
                                      const ModelConfig &config, Value x) {
  switch (config.ssm->version) {
  case 1:
    return buildMamba1(scope, config, x);
  case 2:
    return buildMamba2(scope, config, x);
  default:
    return buildGatedDeltaNet(scope, config, x);
  }
}
