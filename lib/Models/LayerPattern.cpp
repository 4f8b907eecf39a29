//===- LayerPattern.cpp - A model's layers as repeated stacks -------------===//

#include "LayerPattern.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir::stage;
using namespace mlir::stage::models;
using sym::Expr;

/// Runs of identical layers that stay runs (beyond, a period is sought).
static constexpr size_t kMaxPlainRuns = 3;

bool LayerRun::hasMoE() const {
  return llvm::any_of(period,
                      [](const LayerKind &k) { return k.ffn == FfnKind::MoE; });
}

llvm::SmallVector<LayerKind> models::getLayerKinds(const ModelConfig &c,
                                                   int64_t seq) {
  bool windowBinds = c.slidingWindow && *c.slidingWindow < seq;
  llvm::SmallVector<LayerKind> kinds;
  for (int64_t i = 0; i < c.layers; ++i) {
    LayerKind k;
    if (!c.layerKinds.empty()) {
      k = c.layerKinds[i];
    } else if (c.ssm) {
      k.mixer = Mixer::SSM;
      k.ffn = FfnKind::None;
    } else {
      k.ffn = c.isMoELayer(i) ? FfnKind::MoE : FfnKind::Dense;
    }
    k.sliding =
        k.mixer == Mixer::Attention && windowBinds && c.isSlidingLayer(i);
    k.positionless = k.mixer == Mixer::Attention &&
                     i < int64_t(c.positionlessLayers.size()) &&
                     c.positionlessLayers[i];
    kinds.push_back(k);
  }
  return kinds;
}

static std::string rangeName(int64_t begin, int64_t end) {
  return "layers[" + std::to_string(begin) + ":" + std::to_string(end) + "]";
}

/// Consecutive identical layers of `kinds[begin, end)`, one run each.
static void appendPlainRuns(llvm::ArrayRef<LayerKind> kinds, int64_t begin,
                            int64_t end, llvm::SmallVector<LayerRun> &runs) {
  for (int64_t i = begin; i < end; ++i) {
    if (i > begin && runs.back().period.front() == kinds[i]) {
      runs.back().end = i + 1;
      continue;
    }
    LayerRun r;
    r.begin = i;
    r.end = i + 1;
    r.period.push_back(kinds[i]);
    runs.push_back(r);
  }
  for (LayerRun &r : runs) {
    if (r.prefixes.empty()) {
      r.count = Expr(r.end - r.begin);
      r.prefixes.push_back(rangeName(r.begin, r.end));
    }
  }
}

/// Runs of identical layers in `kinds[begin, end)`.
static size_t countRuns(llvm::ArrayRef<LayerKind> kinds, int64_t begin,
                        int64_t end) {
  size_t runs = 0;
  for (int64_t i = begin; i < end; ++i)
    runs += i == begin || kinds[i] != kinds[i - 1];
  return runs;
}

/// The period of at least two layers that, repeated from layer 0 (at least
/// twice) and followed by runs of the layers after its last repetition,
/// makes the fewest layer stacks; the shortest of those. With its
/// repetitions; {0, 0} if none makes fewer than `plainRuns`.
static std::pair<int64_t, int64_t> findPeriod(llvm::ArrayRef<LayerKind> kinds,
                                              size_t plainRuns) {
  int64_t n = kinds.size();
  std::pair<int64_t, int64_t> best = {0, 0};
  size_t bestRuns = plainRuns;
  for (int64_t p = 2; 2 * p <= n; ++p) {
    int64_t matched = p;
    while (matched < n && kinds[matched] == kinds[matched % p])
      ++matched;
    int64_t repeats = matched / p;
    size_t runs = 1 + countRuns(kinds, repeats * p, n);
    if (repeats >= 2 && runs < bestRuns) {
      best = {p, repeats};
      bestRuns = runs;
    }
  }
  return best;
}

llvm::SmallVector<LayerRun> models::getLayerRuns(const ModelConfig &c,
                                                 int64_t seq) {
  llvm::SmallVector<LayerKind> kinds = getLayerKinds(c, seq);
  int64_t n = kinds.size();
  llvm::SmallVector<LayerRun> runs;
  if (c.sharedBlocks) {
    // The layers between two uses of shared blocks stack; a layer with a
    // use is built alone (its mixer also reads the block's output).
    int64_t begin = 0;
    for (int64_t use : c.sharedBlocks->uses) {
      appendPlainRuns(kinds, begin, use, runs);
      begin = use + 1;
    }
    appendPlainRuns(kinds, begin, n, runs);
    return runs;
  }
  appendPlainRuns(kinds, 0, n, runs);
  if (runs.size() == 1) {
    runs[0].count = Expr::symbol("L");
    runs[0].prefixes = {"layers"};
    return runs;
  }
  bool denseThenMoE = runs.size() == 2 && !runs[0].hasMoE() &&
                      runs[1].hasMoE() && c.moe &&
                      runs[0].end == c.moe->firstDenseLayers;
  if (denseThenMoE) {
    runs[0].count = Expr::symbol("Ld");
    runs[1].count = Expr::symbol("L") - Expr::symbol("Ld");
  }
  if (runs.size() <= kMaxPlainRuns)
    return runs;
  auto [p, repeats] = findPeriod(kinds, runs.size());
  if (!p)
    return runs;
  runs.clear();
  LayerRun period;
  period.begin = 0;
  period.end = repeats * p;
  period.period.assign(kinds.begin(), kinds.begin() + p);
  period.count =
      period.end == n ? Expr::symbol("L").divExact(Expr(p)) : Expr(repeats);
  for (int64_t j = 0; j < p; ++j)
    period.prefixes.push_back("layers[" + std::to_string(j) + ":" +
                              std::to_string(period.end) + ":" +
                              std::to_string(p) + "]");
  runs.push_back(period);
  appendPlainRuns(kinds, period.end, n, runs);
  return runs;
}
