//===- SafeFiles.h - Bounded reads, no-follow removals ----------*- C++ -*-===//
//
// A trace directory may be writable by others: whatever is planted there
// (a link, a FIFO, /dev/zero under a rank's name) must neither make a
// reader wait forever or exhaust the memory, nor make a removal reach
// outside what the tool created. Reads take regular files only, up to a
// size; removals work relative to directory descriptors and never follow a
// link (a link is removed, not what it points at).
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_SAFEFILES_H
#define STAGE_SUPPORT_SAFEFILES_H

#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace stage::files {

/// The default limit of a read: the emitter's own limit of a rank's file
/// (`--max-trace-bytes-per-rank`).
constexpr uint64_t kDefaultMaxFileBytes = uint64_t(4) << 30;

/// The bytes of the regular file `path` (through links: the user named
/// it), opened without blocking (a FIFO is refused, not waited on) and
/// refused when larger than `maxBytes`. On failure, null and `error` says
/// why, naming `path`; `missing` tells a file that does not exist.
std::unique_ptr<llvm::MemoryBuffer> readRegularFile(const std::string &path,
                                                    uint64_t maxBytes,
                                                    std::string &error,
                                                    bool *missing = nullptr);
/// As readRegularFile, for the entry `name` of the directory open as
/// `dirFd`, which is not followed if it is a link, and copied rather than
/// mapped (a writer reads what others may change); `ownerUid` receives the
/// file's owner.
std::unique_ptr<llvm::MemoryBuffer>
readRegularFileAt(int dirFd, const std::string &name, uint64_t maxBytes,
                  std::string &error, unsigned *ownerUid);

/// Removes the entry `name` of the directory open as `dirFd`: a file or a
/// link is unlinked, a directory emptied (at most `depth` levels below it)
/// and removed; nothing is followed through a link. False, with `errno`,
/// on the first failure.
bool removeEntryAt(int dirFd, const char *name, unsigned depth);

/// What an entry is, without following a link: "a symbolic link", "a
/// directory", "a FIFO", ... for messages.
std::string describeFileType(unsigned mode);

} // namespace stage::files

#endif // STAGE_SUPPORT_SAFEFILES_H
