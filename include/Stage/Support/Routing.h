//===- Routing.h - Which experts a mixture-of-experts step reaches -*- C++ -*-===//
//
// A router's choices as a distribution: each token picks K of E experts,
// expert e with probability q_e = K p_e (p uniform, Zipf, or measured on a
// real model). Over T tokens, expert e is reached with probability
// 1 - (1 - q_e)^T, so a step reads the weights of E (1 - (1 - K/E)^T)
// experts on average under uniform routing, not all E; and with experts
// placed on the ep ranks in contiguous blocks (as Megatron-LM and DeepSpeed
// place them), the rank holding the most popular block gets the most tokens.
// The IR keeps the mean load (every token counted once); these numbers
// adjust the time of the ops that routing concerns.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_ROUTING_H
#define STAGE_SUPPORT_ROUTING_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace stage {

struct Routing {
  enum Kind { Uniform, Zipf, Measured } kind = Uniform;
  double exponent = 0;       // Zipf: p_e proportional to 1 / (e + 1)^s
  std::vector<double> loads; // Measured: per-expert fractions, summing to 1

  /// `uniform`, `zipf:S` (S > 0) or `loads:F0/F1/...` (one fraction per
  /// expert, normalized); an error message otherwise.
  static std::optional<Routing> parse(llvm::StringRef text, std::string &error);
  std::string str() const;

  /// Per expert, its share p_e of the tokens' choices (summing to 1);
  /// errors when measured loads are not E.
  std::optional<std::vector<double>> shares(int64_t E,
                                            std::string &error) const;
};

/// What routing does to one step of `tokens` tokens, each choosing K
/// distinct experts of E (shares p_e), on `ep` ranks holding contiguous
/// blocks of E/ep experts.
struct RoutingEffect {
  /// The expected fraction of the experts whose weights are read, over all
  /// ranks (exact in totals: sum over e of 1 - (1 - q_e)^T, q_e = K p_e
  /// capped at 1), and on the busiest rank (the rank that reaches the most,
  /// in expectation, over its E/ep).
  double reached = 1, reachedBusiest = 1;
  /// The busiest rank's tokens over the mean rank's, in expectation.
  double busiest = 1;
};
/// While every expert expects at least 64 tokens, the busiest rank is the
/// one whose experts are most popular and each expert is reached; below
/// that, sampling noise decides which rank is busiest and by how much, and
/// the expectations of the maxima come from 512 seeded draws of the step's
/// choices (the same numbers on every run).
RoutingEffect getRoutingEffect(const std::vector<double> &shares, int64_t K,
                               int64_t ep, double tokens);

} // namespace stage

#endif // STAGE_SUPPORT_ROUTING_H
