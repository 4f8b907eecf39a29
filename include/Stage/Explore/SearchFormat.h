//===- SearchFormat.h - Renderings of a plan search -------------*- C++ -*-===//

#ifndef STAGE_EXPLORE_SEARCHFORMAT_H
#define STAGE_EXPLORE_SEARCHFORMAT_H

#include "Stage/Explore/Search.h"
#include "Stage/Explore/StreamSearch.h"
#include "Stage/Explore/Sweep.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::stage::explore {

/// What was asked, for the renderings' titles.
struct SearchTitle {
  std::string model; // the architecture or file name
  int64_t gpus = 1;
  DeviceModel device;
  int64_t batch = 1, seq = 1;
  int64_t top = 10;
  double wallSeconds = 0;
  /// A serving search: the requests decode `decodeTokens` tokens each, at
  /// most `maxTpotSeconds` per token (0: no bound).
  bool serving = false;
  int64_t decodeTokens = 0;
  double maxTpotSeconds = 0;
};

/// The search in a few lines: what was enumerated, compiled, evaluated,
/// left out and why, and the evaluation rate.
std::string describeSearch(const SearchResult &r, const SearchTitle &t);
/// The plans on the Pareto front of time (the iteration, or a serving
/// plan's time per output token) and peak memory (no other plan is faster
/// and smaller), as indices into `r.ranked`, fastest first.
std::vector<size_t> getParetoFront(const SearchResult &r);

/// The summary, then the top plans as a table.
void printSearchMarkdown(const SearchResult &r, const SearchTitle &t,
                         llvm::raw_ostream &os);
/// A JSON array of the top plans, best first.
void printSearchJson(const SearchResult &r, const SearchTitle &t,
                     llvm::raw_ostream &os);
/// One row per top plan, with a header.
void printSearchCsv(const SearchResult &r, const SearchTitle &t,
                    llvm::raw_ostream &os);
/// A page: the summary, every fitting plan drawn as time against memory
/// with the Pareto front marked and labelled, and the top plans' table.
void printSearchHtml(const SearchResult &r, const SearchTitle &t,
                     llvm::raw_ostream &os);

/// A sweep (Sweep.h): per point, the value, the best plan and its time, as
/// Markdown, JSON, CSV or a page with the best time drawn against the value.
void printSweep(const std::vector<SweepPoint> &points, const SweepRange &range,
                const SearchTitle &t, llvm::StringRef format,
                llvm::raw_ostream &os);

/// A request-stream search (StreamSearch.h): the top plans as Markdown
/// (with what was compiled and left out), JSON or CSV.
void printStreamSearch(const StreamSearchResult &r, const SearchTitle &t,
                       llvm::StringRef format, llvm::raw_ostream &os);

} // namespace mlir::stage::explore

#endif // STAGE_EXPLORE_SEARCHFORMAT_H
