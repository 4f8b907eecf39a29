//===- Routing.cpp - Which experts a mixture-of-experts step reaches ------===//

#include "Stage/Support/Routing.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace stage;

std::optional<Routing> Routing::parse(llvm::StringRef text,
                                      std::string &error) {
  Routing r;
  if (text.empty() || text == "uniform")
    return r;
  if (text.consume_front("zipf:")) {
    if (text.getAsDouble(r.exponent) || !(r.exponent > 0) ||
        r.exponent > 16) {
      error = "zipf:S needs an exponent S in (0, 16]";
      return std::nullopt;
    }
    r.kind = Zipf;
    return r;
  }
  if (text.consume_front("loads:")) {
    llvm::SmallVector<llvm::StringRef> parts;
    text.split(parts, '/');
    double sum = 0;
    for (llvm::StringRef p : parts) {
      double v;
      if (p.trim().getAsDouble(v) || !(v >= 0) || !std::isfinite(v)) {
        error = "loads: expected fractions separated by '/', found '" +
                p.str() + "'";
        return std::nullopt;
      }
      r.loads.push_back(v);
      sum += v;
    }
    if (!(sum > 0)) {
      error = "loads: the fractions sum to 0";
      return std::nullopt;
    }
    for (double &v : r.loads)
      v /= sum;
    r.kind = Measured;
    return r;
  }
  error = "unknown routing '" + text.str() +
          "': expected uniform, zipf:S or loads:F0/F1/...";
  return std::nullopt;
}

std::string Routing::str() const {
  switch (kind) {
  case Uniform:
    return "uniform";
  case Zipf: {
    std::string s = "zipf:";
    s += std::to_string(exponent);
    while (s.back() == '0')
      s.pop_back();
    if (s.back() == '.')
      s.pop_back();
    return s;
  }
  case Measured: {
    std::string s = "loads:";
    for (size_t i = 0; i < loads.size(); ++i)
      s += (i ? "/" : "") + std::to_string(loads[i]);
    return s;
  }
  }
  return "uniform";
}

std::optional<std::vector<double>> Routing::shares(int64_t E,
                                                   std::string &error) const {
  std::vector<double> p(size_t(E), 1.0 / double(E));
  if (kind == Zipf) {
    double sum = 0;
    for (int64_t e = 0; e < E; ++e)
      sum += p[e] = std::pow(double(e + 1), -exponent);
    for (double &v : p)
      v /= sum;
  } else if (kind == Measured) {
    if (int64_t(loads.size()) != E) {
      error = "the routing names " + std::to_string(loads.size()) +
              " expert loads, the model has " + std::to_string(E) +
              " experts";
      return std::nullopt;
    }
    p = loads;
  }
  return p;
}

namespace {
/// Per expert, the probability that one token picks it among its K
/// distinct choices: K p_e, the excess of an expert above 1 spread over
/// the others in proportion.
std::vector<double> pickProbabilities(const std::vector<double> &p, int64_t K) {
  std::vector<double> q(p.size());
  for (size_t e = 0; e < p.size(); ++e)
    q[e] = double(K) * p[e];
  for (int round = 0; round < 64; ++round) {
    double excess = 0, rest = 0;
    for (double v : q) {
      if (v > 1)
        excess += v - 1;
      else if (v < 1)
        rest += v;
    }
    if (excess <= 1e-12 || rest <= 0)
      break;
    for (double &v : q)
      v = v >= 1 ? 1 : v + excess * v / rest;
  }
  return q;
}

constexpr int kSamples = 512;

/// E[max over ranks] of the experts each reaches and of the tokens each
/// gets, by drawing the step's choices: each token picks K distinct
/// experts, by the shares (a repeat is drawn again).
void sample(const std::vector<double> &p, int64_t K, int64_t ep,
            int64_t tokens, double &maxReached, double &maxLoad) {
  size_t E = p.size(), perRank = E / size_t(ep);
  std::vector<double> cumulative(E);
  double run = 0;
  for (size_t e = 0; e < E; ++e)
    cumulative[e] = run += p[e];
  std::mt19937_64 g(0x5eed);
  std::vector<int64_t> hits(E);
  std::vector<size_t> chosen;
  double sumReached = 0, sumLoad = 0;
  for (int s = 0; s < kSamples; ++s) {
    std::fill(hits.begin(), hits.end(), 0);
    for (int64_t t = 0; t < tokens; ++t) {
      chosen.clear();
      for (int64_t tries = 0; int64_t(chosen.size()) < K && tries < 64 * K;
           ++tries) {
        double u = double(g() >> 11) * 0x1.0p-53 * run;
        size_t e = std::min<size_t>(
            E - 1, size_t(std::upper_bound(cumulative.begin(),
                                           cumulative.end(), u) -
                          cumulative.begin()));
        if (std::find(chosen.begin(), chosen.end(), e) == chosen.end())
          chosen.push_back(e);
      }
      for (size_t e : chosen)
        ++hits[e];
    }
    int64_t mostReached = 0, mostLoad = 0;
    for (size_t r = 0; r < size_t(ep); ++r) {
      int64_t reached = 0, load = 0;
      for (size_t e = r * perRank; e < (r + 1) * perRank; ++e) {
        reached += hits[e] > 0;
        load += hits[e];
      }
      mostReached = std::max(mostReached, reached);
      mostLoad = std::max(mostLoad, load);
    }
    sumReached += double(mostReached);
    sumLoad += double(mostLoad);
  }
  maxReached = sumReached / kSamples;
  maxLoad = sumLoad / kSamples;
}
} // namespace

RoutingEffect stage::getRoutingEffect(const std::vector<double> &shares,
                                      int64_t K, int64_t ep, double tokens) {
  RoutingEffect r;
  size_t E = shares.size();
  if (E == 0 || K < 1 || ep < 1 || E % size_t(ep) || !(tokens > 0))
    return r;
  std::vector<double> q = pickProbabilities(shares, K);
  size_t perRank = E / size_t(ep);
  double reached = 0, meanLoad = 0, maxLoad = -1, fewest = INFINITY;
  for (size_t rank = 0; rank < size_t(ep); ++rank) {
    double load = 0, rankReached = 0;
    for (size_t e = rank * perRank; e < (rank + 1) * perRank; ++e) {
      load += q[e];
      rankReached += 1 - std::pow(1 - std::min(q[e], 1.0), tokens);
      fewest = std::min(fewest, q[e] * tokens);
    }
    reached += rankReached;
    meanLoad += load / double(ep);
    if (load > maxLoad) {
      maxLoad = load;
      r.reachedBusiest = rankReached / double(perRank);
    }
  }
  r.reached = reached / double(E);
  r.busiest = meanLoad > 0 ? maxLoad / meanLoad : 1;
  // Few tokens per expert: which rank is busiest is chance, and the
  // busiest is busier than any rank's mean.
  if (fewest < 64 && ep > 1) {
    double mostReached, mostLoad;
    int64_t T = std::max<int64_t>(1, int64_t(std::llround(tokens)));
    sample(shares, K, ep, T, mostReached, mostLoad);
    r.reachedBusiest = std::max(r.reachedBusiest, mostReached / double(perRank));
    r.busiest = std::max(r.busiest, mostLoad / (double(T * K) / double(ep)));
  }
  return r;
}
