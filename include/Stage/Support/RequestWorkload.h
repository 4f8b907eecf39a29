//===- RequestWorkload.h - Requests arriving at a server ---------*- C++ -*-===//
//
// A serving workload as a stream of requests: read from a file (JSON lines
// or CSV, including the columns of the public Azure LLM inference traces)
// or drawn from a synthetic stream (Poisson or periodic arrivals, prompt
// and output lengths from a distribution). Drawn with a seeded generator
// whose every step the standard fixes: the same spelling gives the same
// requests on every platform.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_REQUESTWORKLOAD_H
#define STAGE_SUPPORT_REQUESTWORKLOAD_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stage {

struct Request {
  double arrival = 0; // seconds
  int64_t promptTokens = 0, outputTokens = 0;
};

/// What is wrong with a workload, at a line and column of its text (1-based;
/// 0 when it is about the whole).
struct WorkloadError {
  std::string message;
  unsigned line = 0, column = 0;
};

/// Requests from a file's text, in arrival order (ties keep the file's
/// order): JSON lines, each `{"arrival": s, "prompt_tokens": n,
/// "output_tokens": n}`, or CSV (`csv`) whose header names the columns
/// `arrival,prompt_tokens,output_tokens` or the Azure traces'
/// `TIMESTAMP,ContextTokens,GeneratedTokens` (timestamps as `YYYY-MM-DD
/// HH:MM:SS[.fraction]`, arrivals counted from the first). Lengths are
/// positive integers, arrivals finite and not negative.
std::optional<WorkloadError> parseRequests(llvm::StringRef text, bool csv,
                                           std::vector<Request> &out);

/// A synthetic stream, `KIND:key=value,...`: KIND `poisson` (exponential
/// gaps at `rate` requests/s) or `periodic` (one every 1/`rate` s; without
/// a rate, all at 0); `count` requests; `prompt` and `output` lengths, each
/// `N`, `uniform:A:B` (integers, inclusive), `exponential:MEAN` or
/// `lognormal:MEDIAN:SIGMA` (rounded, at least 1); `seed` (default 1).
/// Whether `spec` names one: it starts with a known kind and a colon.
bool isSyntheticWorkload(llvm::StringRef spec);
std::optional<std::string> generateRequests(llvm::StringRef spec,
                                            std::vector<Request> &out);

} // namespace stage

#endif // STAGE_SUPPORT_REQUESTWORKLOAD_H
