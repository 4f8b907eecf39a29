//===- TraceSetWriter.h - Writing every rank's file -------------*- C++ -*-===//

#ifndef STAGE_LIB_TARGET_CHAKRA_TRACESETWRITER_H
#define STAGE_LIB_TARGET_CHAKRA_TRACESETWRITER_H

#include "TraceSet.h"

#include <string>

namespace mlir::stage::chakra {

struct WriteOptions {
  std::string dir;
  std::string name = "workload.%d.et"; // %d: the rank
  int64_t first = 0, last = -1;        // ranks [first, last); -1: all
  unsigned threads = 0;                // 0: all cores
  bool encodeOnly = false;             // encode, do not write
  /// Limits checked before any file is written (docs/Limits.md), from a
  /// few ranks encoded first: the largest file, and all files together.
  double maxBytesPerRank = kDefaultMaxBytesPerRank;
  double maxTotalBytes = kDefaultMaxTotalBytes;
  /// Other files of the set (name, contents), published with it.
  std::vector<std::pair<std::string, std::string>> extras;
  static constexpr double kDefaultMaxBytesPerRank = 4.0 * (1ull << 30);
  static constexpr double kDefaultMaxTotalBytes = 1024.0 * (1ull << 30);
};

struct WriteStats {
  int64_t ranks = 0;
  uint64_t bytes = 0;
  std::string groupsFile;
};

/// The groups file's name for a trace name: `.%d` removed, `.et` -> `.json`
/// (`workload.%d.et` -> `workload.json`), as the reference tool names it.
std::string getGroupsFileName(llvm::StringRef traceName);

/// Encodes (and writes) the files of ranks [first, last), the groups file
/// and the set's manifest. First, a few ranks are encoded to size the set:
/// above a limit of `o`, or above the free space of the output directory's
/// file system, it is refused before anything is written. The files are
/// written under a staging directory and published together by the
/// manifest (OutputDirectory.h); an error or an interrupt before the
/// publication removes everything this run wrote. Errors name the file.
FailureOr<WriteStats> writeTraceSet(const TraceSet &set,
                                    const WriteOptions &o, Location loc);

} // namespace mlir::stage::chakra

#endif // STAGE_LIB_TARGET_CHAKRA_TRACESETWRITER_H
