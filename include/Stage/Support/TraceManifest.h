//===- TraceManifest.h - What a published trace set holds -------*- C++ -*-===//
//
// A trace set is published by its manifest, written last and replaced in
// one rename: the set's identity, its rank count, the file name pattern,
// and every file with its size and digest. Readers trust only what a
// complete manifest names (every rank 0..N-1), and only files whose bytes
// match it; a directory without a manifest holds no published set (a write
// was interrupted or is under way). Slices of one set (`--ranks=A:B`) merge
// their entries into one manifest, which is complete once every slice is
// in. The format is docs/Safety.md's.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_TRACEMANIFEST_H
#define STAGE_SUPPORT_TRACEMANIFEST_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace stage {

struct ManifestEntry {
  uint64_t bytes = 0;
  std::string digest; // fileDigest of the bytes
  bool operator==(const ManifestEntry &o) const {
    return bytes == o.bytes && digest == o.digest;
  }
};

struct TraceManifest {
  static constexpr llvm::StringLiteral kFormat = "stage-trace-set";
  static constexpr int64_t kVersion = 1;

  /// The set's identity: every rank file carries it in its metadata.
  std::string setId;
  int64_t ranks = 0;
  /// The rank files' name, with `%d` for the rank, and the groups file.
  std::string traceName;
  std::string groupsFile;
  ManifestEntry groups;
  /// The rank files present, by rank.
  std::map<int64_t, ManifestEntry> traces;
  /// Other files of the set, by name (the simulator's configuration of the
  /// cluster the set was priced for).
  std::map<std::string, ManifestEntry> extras;

  bool isComplete() const { return int64_t(traces.size()) == ranks; }
  std::string traceFile(int64_t rank) const;
  /// The JSON text, one rank per line, ranks in increasing order (the same
  /// set gives the same bytes however its slices were written).
  std::string print() const;
  /// `text` read back; nullopt with `error` on any malformed field.
  static std::optional<TraceManifest> parse(llvm::StringRef text,
                                            std::string &error);
};

/// The digest of a file's bytes (XXH3, 16 hex digits).
std::string fileDigest(llvm::StringRef bytes);

/// The manifest's name next to the groups file `workload.json`:
/// `workload.manifest.json`.
std::string getManifestFileName(llvm::StringRef groupsFile);

/// Why `name` is not a rank file name pattern (one `%d`, a plain file name
/// not starting with '.', more than the rank number), or "".
std::string checkTraceName(llvm::StringRef name);

/// The rank a file name of `pattern` stands for, or -1.
int64_t rankOfTraceFile(llvm::StringRef pattern, llvm::StringRef name);

} // namespace stage

#endif // STAGE_SUPPORT_TRACEMANIFEST_H
