//===- SafeFiles.cpp - Bounded reads and removals that follow no link -----===//

#include "Stage/Support/SafeFiles.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace stage::files;

std::string stage::files::describeFileType(unsigned mode) {
  switch (mode & S_IFMT) {
  case S_IFREG: return "a regular file";
  case S_IFDIR: return "a directory";
  case S_IFLNK: return "a symbolic link";
  case S_IFIFO: return "a FIFO";
  case S_IFCHR: return "a character device";
  case S_IFBLK: return "a block device";
  case S_IFSOCK: return "a socket";
  default: return "not a regular file";
  }
}

static std::string bytesText(uint64_t n) {
  return std::to_string(n) + " bytes";
}

/// The bytes of `fd`, opened as `path` (0 or the open's errno in `openErrno`),
/// if a regular file of at most `maxBytes`; closes `fd`. `copy` reads
/// them instead of mapping them: a mapped file that another user truncates
/// would fault on access.
static std::unique_ptr<llvm::MemoryBuffer>
readOpened(int fd, int openErrno, const std::string &path, uint64_t maxBytes,
           std::string &error, bool *missing, unsigned *ownerUid, bool copy) {
  if (missing)
    *missing = false;
  if (fd < 0) {
    if (missing)
      *missing = openErrno == ENOENT;
    error = "cannot read " + path + ": " + std::strerror(openErrno);
    return nullptr;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    error = path + " is " + describeFileType(st.st_mode) +
            ", not a regular file: refused";
    ::close(fd);
    return nullptr;
  }
  if (uint64_t(st.st_size) > maxBytes) {
    error = path + " is " + bytesText(uint64_t(st.st_size)) +
            ", more than the limit of " + bytesText(maxBytes) + ": refused";
    ::close(fd);
    return nullptr;
  }
  if (ownerUid)
    *ownerUid = st.st_uid;
  auto buf = llvm::MemoryBuffer::getOpenFile(fd, path, uint64_t(st.st_size),
                                             /*RequiresNullTerminator=*/false,
                                             /*IsVolatile=*/copy);
  ::close(fd);
  if (!buf) {
    error = "cannot read " + path + ": " + buf.getError().message();
    return nullptr;
  }
  return std::move(*buf);
}

std::unique_ptr<llvm::MemoryBuffer>
stage::files::readRegularFile(const std::string &path, uint64_t maxBytes,
                              std::string &error, bool *missing) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  return readOpened(fd, fd < 0 ? errno : 0, path, maxBytes, error, missing,
                    nullptr, /*copy=*/false);
}

std::unique_ptr<llvm::MemoryBuffer>
stage::files::readRegularFileAt(int dirFd, const std::string &name,
                                uint64_t maxBytes, std::string &error,
                                unsigned *ownerUid) {
  int fd = ::openat(dirFd, name.c_str(),
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  return readOpened(fd, fd < 0 ? errno : 0, name, maxBytes, error, nullptr,
                    ownerUid, /*copy=*/true);
}

bool stage::files::removeEntryAt(int dirFd, const char *name, unsigned depth) {
  struct stat st;
  if (::fstatat(dirFd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT;
  if (!S_ISDIR(st.st_mode))
    return ::unlinkat(dirFd, name, 0) == 0 || errno == ENOENT;
  if (depth == 0) {
    errno = ENOTEMPTY;
    return ::unlinkat(dirFd, name, AT_REMOVEDIR) == 0;
  }
  // O_NOFOLLOW: were the directory swapped for a link since the fstatat,
  // the open fails instead of entering the link's target.
  int sub =
      ::openat(dirFd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub < 0)
    return false;
  DIR *d = ::fdopendir(sub);
  if (!d) {
    ::close(sub);
    return false;
  }
  std::vector<std::string> entries;
  while (struct dirent *e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
      entries.emplace_back(e->d_name);
  bool ok = true;
  for (const std::string &e : entries)
    if (!removeEntryAt(sub, e.c_str(), depth - 1)) {
      ok = false;
      break;
    }
  int saved = errno;
  ::closedir(d); // closes `sub`
  errno = saved;
  return ok && (::unlinkat(dirFd, name, AT_REMOVEDIR) == 0 || errno == ENOENT);
}
