//===- OutputDirectory.h - A trace set published in one step ----*- C++ -*-===//
//
// The directory a trace set is written to, as one transaction. Files are
// written into a staging directory of this run; publication, under the
// directory's lock, first withdraws the manifest of the set there, moves
// the new files in, removes the files the old manifest named that the new
// set does not replace, and publishes the new manifest last, in one rename.
// A reader that trusts only what a complete manifest names therefore sees
// the old set, no set, or the new set: never a mix (docs/Safety.md).
//
// Everything is done relative to descriptors of the directories opened at
// the start, and nothing is removed through a link: a staging directory is
// removed only when it carries this tool's marker, owned by the same user,
// and no live run holds the marker's lock.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRA_OUTPUTDIRECTORY_H
#define STAGE_LIB_TARGET_CHAKRA_OUTPUTDIRECTORY_H

#include "Stage/Support/TraceManifest.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace mlir::stage::chakra {

// The manifest's format is shared with the verifier (Support, no MLIR).
using ::stage::checkTraceName;
using ::stage::fileDigest;
using ::stage::getManifestFileName;
using ::stage::ManifestEntry;
using ::stage::TraceManifest;

class OutputDirectory {
public:
  /// Opens `dir` (creating it and its missing parents), notes the set
  /// published there (by its manifest `manifestName`), removes the staging
  /// directories of runs that are gone, and creates this run's.
  static FailureOr<std::unique_ptr<OutputDirectory>>
  open(const std::string &dir, const std::string &manifestName, Location loc);
  /// Removes the staging directory, and what the run created if it did not
  /// publish.
  ~OutputDirectory();

  /// A staging subdirectory of its own for writer `t`: its descriptor, or
  /// -1 with `error` set.
  int createWorkerDir(unsigned t, std::string &error);
  /// Writes `data` to `name` in the directory `dirFd` (a staging one); an
  /// error naming the file by its final name, or "".
  std::string writeFile(int dirFd, const std::string &name,
                        llvm::StringRef data) const;
  int getStagingFd() const { return stagingFd; }

  /// Publishes `m` (this run's files, all in staging: each trace in
  /// `workerFdOf[rank - first]`'s directory, the groups file in the staging
  /// directory), merged with the manifest there when it is of the same set.
  /// Fails without touching the directory when another run published
  /// another set there since this one started.
  LogicalResult publish(const TraceManifest &m, int64_t first,
                        llvm::ArrayRef<int> workerFdOf, Location loc);

private:
  OutputDirectory() = default;
  std::string path(llvm::StringRef name) const {
    return dir + "/" + name.str();
  }
  LogicalResult lock(Location loc);
  void removeAbandonedStaging();

  std::string dir;
  int dirFd = -1, stagingFd = -1, markerFd = -1, lockFd = -1;
  std::string stagingName, manifestName;
  std::vector<int> workerFds;
  /// Directories this run created (deepest first), removed on failure.
  llvm::SmallVector<std::string> created;
  /// The set published in `dir` when the run started (setKey), if any.
  std::string seenSet;
  bool published = false;
};

} // namespace mlir::stage::chakra

#endif // STAGE_LIB_TARGET_CHAKRA_OUTPUTDIRECTORY_H
