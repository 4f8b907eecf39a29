//===- PlanSpace.h - The parallelization plans of a job ---------*- C++ -*-===//
//
// The first layer of the plan search (issue 23, docs/Explore.md): every
// plan stage-train could run for a model on exactly N GPUs, before any is
// compiled. A plan's degrees multiply to N (ep is a grid axis of its own:
// the dense layers are data-parallel over dp x ep, as Megatron-LM carves
// expert parallelism out of data parallelism); the rules here are the ones
// known from the model's sizes alone (divisibility, layer counts, the
// schedules' micro-batch constraints), so that the search compiles only
// plans that can be built.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_EXPLORE_PLANSPACE_H
#define STAGE_EXPLORE_PLANSPACE_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::stage::explore {

/// What a model's sizes allow.
struct ModelLimits {
  int64_t layers = 1;      // layer stack iterations (a hybrid's periods)
  int64_t heads = 1, kvHeads = 1, ffn = 1, vocab = 1;
  int64_t experts = 0;     // 0: dense
  int64_t batch = 1, seq = 1;
};

/// One bound on a plan's field: `tp<=8`, `pp=4`, `zero>=1`.
struct Constraint {
  std::string field; // dp tp pp cp ep M v zero B
  enum Op { LE, LT, GE, GT, EQ, NE } op;
  int64_t value;
  bool holds(int64_t x) const;
};

/// Parses space-separated constraints; the error names the first bad one.
std::optional<std::vector<Constraint>> parseConstraints(const std::string &text,
                                                        std::string &error);

struct Plan {
  int64_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  int64_t microBatches = 1, virtualStages = 1;
  std::string schedule = "1f1b";
  int zero = 0;
  std::string recompute = "none";
  bool sp = false;
  /// A serving plan (stage-infer): `batch` requests in flight, each
  /// decoding `decodeTokens` tokens; schedule, ZeRO and recomputation do
  /// not apply.
  bool serving = false;
  int64_t batch = 0, decodeTokens = 0;
  /// The plan as stage-train's (stage-infer's) options, every one spelled
  /// out.
  std::string options() const;
  int64_t field(const std::string &name) const;
};

struct SpaceOptions {
  int64_t gpus = 1;
  std::vector<Constraint> constraints;
  /// Largest number of chunks per rank of the interleaved schedule.
  int64_t maxVirtualStages = 4;
  /// Serving plans instead of training ones: the batch (requests in
  /// flight) ranges over the powers of two up to the model's and the
  /// model's itself; each request decodes `decodeTokens` tokens.
  bool serving = false;
  int64_t decodeTokens = 128;
};

struct PlanSpace {
  std::vector<Plan> plans;
  /// Plans left out, by reason (for the search's summary).
  std::map<std::string, int64_t> excluded;
};

/// Every valid plan for exactly `o.gpus` GPUs, in a deterministic order:
/// training plans, or serving plans (degrees, micro-batches pipelined over
/// pp, sp, batch) under `o.serving`.
PlanSpace enumeratePlans(const ModelLimits &model, const SpaceOptions &o);

} // namespace mlir::stage::explore

#endif // STAGE_EXPLORE_PLANSPACE_H
