//===- SetFiles.h - Which files make a trace set, and are they it -*- C++
//-*-===//
//
// What every reader of a set checks first, before it believes a file:
// the set is what its complete manifest names (every rank's file, with
// its size and digest, and the groups file), each rank's file carries the
// set's identity and its own rank, and nothing is read that is not a
// regular file within the size limit. A set of another generator has no
// manifest: with `--without-manifest` its files are found by name, and
// the identities its ranks carry, if any, must still agree.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRAVERIFY_SETFILES_H
#define STAGE_LIB_TARGET_CHAKRAVERIFY_SETFILES_H

#include "TraceReader.h"
#include "TraceSet.h"

#include "Stage/Support/TraceManifest.h"

#include <optional>

namespace stage::trace {

struct SetFiles {
  int64_t ranks = 0;
  /// Per rank, its file's path ("": no file, in a set without manifest).
  std::vector<std::string> traces;
  std::string groups; // the groups file's path
  bool groupsExist = false;
  std::optional<TraceManifest> manifest;
};

/// The bytes of the set's file `path`: from the options' in-memory files,
/// or a regular file of at most `o.maxFileBytes`. Null with `error` set
/// (and `missing` when the file does not exist) on failure.
std::unique_ptr<llvm::MemoryBuffer> readSetFile(const TraceSetOptions &o,
                                                const std::string &path,
                                                std::string &error,
                                                bool *missing = nullptr);

/// The files of the set `o` names, or false with the errors that say why
/// there is nothing to read (no manifest, an incomplete one, no files).
bool findSetFiles(const TraceSetOptions &o, SetFiles &out, Errors &errors);

/// Rank `rank`'s file, checked against the manifest's size and digest; null
/// with `problem` set when it cannot be read or does not match.
std::unique_ptr<llvm::MemoryBuffer> readRankFile(const TraceSetOptions &o,
                                                 const SetFiles &files,
                                                 int64_t rank,
                                                 std::string &problem);

/// The groups file, checked against the manifest; null with `problem`.
std::unique_ptr<llvm::MemoryBuffer> readGroupsFile(const TraceSetOptions &o,
                                                   const SetFiles &files,
                                                   std::string &problem);

/// Whether rank `rank`'s decoded metadata ties it to the set: its rank and
/// the rank count where it names them, and the manifest's identity. ""
/// or the problem. (Without a manifest, the caller compares the ranks'
/// identities with each other.)
std::string checkRankIdentity(const TraceFile &f, int64_t rank,
                              const SetFiles &files);

} // namespace stage::trace

#endif // STAGE_LIB_TARGET_CHAKRAVERIFY_SETFILES_H
