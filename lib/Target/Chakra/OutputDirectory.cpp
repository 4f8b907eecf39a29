//===- OutputDirectory.cpp - A trace set published in one step ------------===//

#include "OutputDirectory.h"

#include "Stage/Support/SafeFiles.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

namespace {
constexpr const char kStagingPrefix[] = ".stage-partial-";
/// Inside a staging directory: its owner's marker, locked while it runs.
constexpr const char kMarkerName[] = "owner";
constexpr char kMarker[] = "stage staging directory\n";
constexpr size_t kMarkerSize = sizeof(kMarker) - 1;
/// The lock file of a trace directory, taken while a set is published.
constexpr const char kLockName[] = ".stage-lock";
/// How long publication waits for another run's.
constexpr int kLockWaitSeconds = 600;

std::string errnoText() { return std::strerror(errno); }

/// An open file description's write lock on all of `fd` (released when the
/// descriptor is closed, also by a killed process): 0, or the errno.
int tryLock(int fd) {
  struct flock l;
  std::memset(&l, 0, sizeof(l));
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  return ::fcntl(fd, F_OFD_SETLK, &l) == 0 ? 0 : errno;
}

bool isBusy(int err) { return err == EAGAIN || err == EACCES; }

/// What identifies a published set, for telling whether another run
/// replaced it.
std::string setKey(const TraceManifest &m) {
  return m.setId + "/" + std::to_string(m.ranks) + "/" + m.traceName + "/" +
         m.groupsFile + "/" + m.groups.digest;
}

/// The manifest `name` of the directory `dirFd`, if it is a regular file
/// (not followed through a link) holding a valid manifest; `ours` tells
/// whether this user owns it (only then are the files it names removed).
std::optional<TraceManifest> readManifestAt(int dirFd, const std::string &name,
                                            bool &ours) {
  ours = false;
  constexpr uint64_t kMaxManifestBytes = uint64_t(256) << 20;
  unsigned owner = 0;
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> text = ::stage::files::readRegularFileAt(
      dirFd, name, kMaxManifestBytes, error, &owner);
  if (!text)
    return std::nullopt;
  ours = owner == ::geteuid();
  return TraceManifest::parse(text->getBuffer(), error);
}

std::string randomSuffix() {
  std::random_device rd;
  uint64_t v = (uint64_t(rd()) << 32) ^ rd();
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format_hex_no_prefix(v, 16);
  return s;
}
} // namespace

FailureOr<std::unique_ptr<OutputDirectory>>
OutputDirectory::open(const std::string &dir, const std::string &manifestName,
                      Location loc) {
  std::unique_ptr<OutputDirectory> d(new OutputDirectory);
  d->dir = dir;
  d->manifestName = manifestName;
  for (llvm::StringRef p = dir; !p.empty() && !llvm::sys::fs::exists(p);
       p = llvm::sys::path::parent_path(p))
    d->created.push_back(p.str());
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    d->created.clear();
    return emitError(loc) << "cannot create the output directory " << dir
                          << ": " << ec.message();
  }
  // The directory the user named, through a link if it is one; from here
  // on everything is relative to this descriptor.
  d->dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d->dirFd < 0)
    return emitError(loc) << "cannot use " << dir
                          << " as the output directory: " << errnoText();
  bool ours;
  if (std::optional<TraceManifest> m =
          readManifestAt(d->dirFd, manifestName, ours))
    d->seenSet = setKey(*m);
  d->removeAbandonedStaging();
  for (int attempt = 0; attempt < 16 && d->stagingFd < 0; ++attempt) {
    std::string name = kStagingPrefix + randomSuffix();
    if (::mkdirat(d->dirFd, name.c_str(), 0700) != 0) {
      if (errno == EEXIST)
        continue;
      return emitError(loc) << "cannot write to the output directory " << dir
                            << ": " << errnoText();
    }
    d->stagingName = name;
    d->stagingFd = ::openat(d->dirFd, name.c_str(),
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d->stagingFd < 0)
      return emitError(loc) << "cannot write to the output directory " << dir
                            << ": " << errnoText();
  }
  if (d->stagingFd < 0)
    return emitError(loc) << "cannot create a staging directory in " << dir;
  // The marker: how a later run knows this directory is a staging one of
  // this user's, and, by its lock, whether this run still lives. It is
  // locked before its text is written: a run that finds the text finds
  // the lock taken. (Where the file system has no locks, a later run
  // cannot take the lock either, and leaves the directory alone.)
  d->markerFd = ::openat(d->stagingFd, kMarkerName,
                         O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                         0600);
  if (d->markerFd < 0)
    return emitError(loc) << "cannot create " << d->path(d->stagingName)
                          << "/" << kMarkerName << ": " << errnoText();
  (void)tryLock(d->markerFd);
  if (::write(d->markerFd, kMarker, kMarkerSize) != ssize_t(kMarkerSize))
    return emitError(loc) << "cannot write " << d->path(d->stagingName) << "/"
                          << kMarkerName << ": " << errnoText();
  return d;
}

OutputDirectory::~OutputDirectory() {
  for (int fd : workerFds)
    ::close(fd);
  if (stagingFd >= 0)
    ::close(stagingFd);
  if (!stagingName.empty())
    (void)::stage::files::removeEntryAt(dirFd, stagingName.c_str(), 2);
  if (markerFd >= 0)
    ::close(markerFd);
  if (lockFd >= 0)
    ::close(lockFd);
  if (!published && !created.empty()) {
    // The directory is this run's: its lock file too.
    (void)::unlinkat(dirFd, kLockName, 0);
    for (const std::string &d : created)
      if (llvm::sys::fs::remove(d)) // not empty: someone else's now
        break;
  }
  if (dirFd >= 0)
    ::close(dirFd);
}

void OutputDirectory::removeAbandonedStaging() {
  int fd = ::dup(dirFd);
  DIR *d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (!d) {
    if (fd >= 0)
      ::close(fd);
    return;
  }
  std::vector<std::string> names;
  while (struct dirent *e = ::readdir(d))
    if (llvm::StringRef(e->d_name).starts_with(kStagingPrefix))
      names.emplace_back(e->d_name);
  ::closedir(d);
  uid_t me = ::geteuid();
  for (const std::string &name : names) {
    // A directory (not a link to one) of this user's...
    struct stat st, opened;
    if (::fstatat(dirFd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode) || st.st_uid != me)
      continue;
    int sub = ::openat(dirFd, name.c_str(),
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0)
      continue;
    bool abandoned = false;
    if (::fstat(sub, &opened) == 0 && opened.st_ino == st.st_ino &&
        opened.st_dev == st.st_dev) {
      // ... with this tool's marker, owned by this user, whose lock no
      // live run holds.
      int marker = ::openat(sub, kMarkerName,
                            O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      struct stat ms;
      char text[kMarkerSize + 1] = {};
      if (marker >= 0 && ::fstat(marker, &ms) == 0 && S_ISREG(ms.st_mode) &&
          ms.st_uid == me &&
          ::pread(marker, text, sizeof(text), 0) == ssize_t(kMarkerSize) &&
          std::memcmp(text, kMarker, kMarkerSize) == 0)
        abandoned = tryLock(marker) == 0;
      if (marker >= 0)
        ::close(marker);
    }
    ::close(sub);
    if (abandoned)
      (void)::stage::files::removeEntryAt(dirFd, name.c_str(), 2);
  }
}

int OutputDirectory::createWorkerDir(unsigned t, std::string &error) {
  std::string name = std::to_string(t);
  int fd = -1;
  if (::mkdirat(stagingFd, name.c_str(), 0700) == 0)
    fd = ::openat(stagingFd, name.c_str(),
                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot write to the output directory " + dir + ": " + errnoText();
    return -1;
  }
  workerFds.push_back(fd);
  return fd;
}

std::string OutputDirectory::writeFile(int fd, const std::string &name,
                                       llvm::StringRef data) const {
  std::string shownAs = path(name);
  int out =
      ::openat(fd, name.c_str(),
               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (out < 0)
    return "cannot create " + shownAs + ": " + errnoText();
  const char *p = data.data();
  size_t left = data.size();
  while (left) {
    ssize_t n = ::write(out, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      std::string err = "cannot write " + shownAs + ": " + errnoText();
      ::close(out);
      return err;
    }
    p += n;
    left -= size_t(n);
  }
  if (::close(out) != 0)
    return "cannot write " + shownAs + ": " + errnoText();
  return "";
}

LogicalResult OutputDirectory::lock(Location loc) {
  lockFd =
      ::openat(dirFd, kLockName,
               O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  struct stat st;
  if (lockFd < 0 || ::fstat(lockFd, &st) != 0 || !S_ISREG(st.st_mode))
    return emitError(loc) << "cannot lock " << dir << " (its lock file "
                          << path(kLockName) << "): "
                          << (lockFd < 0 ? errnoText() : "not a regular file");
  auto start = std::chrono::steady_clock::now();
  bool told = false;
  while (true) {
    int err = tryLock(lockFd);
    if (!err)
      return success();
    if (!isBusy(err)) {
      emitWarning(loc) << "cannot lock " << dir << " (" << std::strerror(err)
                       << "): a concurrent writer there would not be detected";
      return success();
    }
    auto waited = std::chrono::steady_clock::now() - start;
    if (waited > std::chrono::seconds(kLockWaitSeconds))
      return emitError(loc) << "another run holds the lock of " << dir << " ("
                            << path(kLockName) << ") for more than "
                            << kLockWaitSeconds << " s: nothing was published";
    if (!told && waited > std::chrono::seconds(2)) {
      emitRemark(loc) << "waiting for another run's publication in " << dir;
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

LogicalResult OutputDirectory::publish(const TraceManifest &m, int64_t first,
                                       llvm::ArrayRef<int> workerFdOf,
                                       Location loc) {
  if (failed(lock(loc)))
    return failure();
  bool ours = false;
  std::optional<TraceManifest> current =
      readManifestAt(dirFd, manifestName, ours);
  bool sameSet = current && setKey(*current) == setKey(m);
  if (current && !sameSet && setKey(*current) != seenSet)
    return emitError(loc)
           << "another run published a different trace set (" << current->setId
           << ") in " << dir
           << " while this one wrote: it was left in place and nothing was "
              "published; write again to replace it";

  int64_t last = first + int64_t(workerFdOf.size());
  auto inSlice = [&](int64_t r) { return r >= first && r < last; };
  // Withdraw what this run replaces: the whole manifest of another set, or
  // this slice's entries of this set's.
  TraceManifest kept = m;
  kept.traces.clear();
  kept.extras = sameSet ? current->extras : decltype(m.extras)();
  if (sameSet)
    for (const auto &[r, e] : current->traces)
      if (!inSlice(r))
        kept.traces.emplace(r, e);
  auto placeManifest = [&](const TraceManifest &which) -> std::string {
    std::string temp = manifestName + ".new";
    if (std::string err = writeFile(stagingFd, temp, which.print());
        !err.empty())
      return err;
    if (::renameat(stagingFd, temp.c_str(), dirFd, manifestName.c_str()) != 0)
      return "cannot publish " + path(manifestName) + ": " + errnoText();
    return "";
  };
  if (kept.traces.empty()) {
    if (::unlinkat(dirFd, manifestName.c_str(), 0) != 0 && errno != ENOENT)
      return emitError(loc) << "cannot withdraw " << path(manifestName) << ": "
                            << errnoText() << "; nothing was published";
  } else if (std::string err = placeManifest(kept); !err.empty()) {
    return emitError(loc) << err << "; nothing was published";
  }

  // Move the files in. From here on a failure leaves no manifest naming
  // them: the directory holds no complete set until a write succeeds.
  llvm::SmallVector<std::string> moved;
  auto place = [&](int from, const std::string &file) -> std::string {
    if (::renameat(from, file.c_str(), dirFd, file.c_str()) != 0)
      return "cannot move " + file + " into " + dir + ": " + errnoText();
    moved.push_back(file);
    return "";
  };
  std::string err;
  for (int64_t r = first; r < last && err.empty(); ++r)
    err = place(workerFdOf[r - first], m.traceFile(r));
  if (err.empty())
    err = place(stagingFd, m.groupsFile);
  for (const auto &extra : m.extras)
    if (err.empty())
      err = place(stagingFd, extra.first);
  if (err.empty()) {
    // The files of the set replaced that this one does not overwrite, and
    // only those its own (this user's) manifest names.
    if (current && !sameSet && ours) {
      for (const auto &[r, e] : current->traces) {
        std::string file = current->traceFile(r);
        if (!(current->traceName == m.traceName && inSlice(r)))
          (void)::unlinkat(dirFd, file.c_str(), 0);
      }
      if (current->groupsFile != m.groupsFile)
        (void)::unlinkat(dirFd, current->groupsFile.c_str(), 0);
    }
    // The old set's other files this one does not replace (also those of
    // a manifest of the same set: the last write's are the set's).
    if (current && ours)
      for (const auto &extra : current->extras)
        if (!m.extras.count(extra.first))
          (void)::unlinkat(dirFd, extra.first.c_str(), 0);
    TraceManifest all = kept;
    for (const auto &[r, e] : m.traces)
      all.traces[r] = e;
    all.extras = m.extras;
    err = placeManifest(all);
  }
  if (!err.empty()) {
    for (const std::string &f : moved)
      (void)::unlinkat(dirFd, f.c_str(), 0);
    return emitError(loc) << err << "; " << dir
                          << " holds no complete trace set now";
  }
  published = true;
  return success();
}
