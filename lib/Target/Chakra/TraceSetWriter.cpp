//===- TraceSetWriter.cpp - Writing every rank's file ---------------------===//

#include "TraceSetWriter.h"


#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <thread>
#include <unistd.h>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

std::string mlir::stage::chakra::getGroupsFileName(llvm::StringRef name) {
  std::string s = name.str();
  if (size_t at = s.find(".%d"); at != std::string::npos)
    s.erase(at, 3);
  else if (size_t at = s.find("%d"); at != std::string::npos)
    s.erase(at, 2);
  if (llvm::StringRef(s).ends_with(".et"))
    s = s.substr(0, s.size() - 3) + ".json";
  else
    s += ".json";
  return s;
}

static std::string rankFileName(llvm::StringRef pattern, int64_t rank) {
  std::string s = pattern.str();
  size_t at = s.find("%d");
  return s.substr(0, at) + std::to_string(rank) + s.substr(at + 2);
}

/// The rank a file name of `pattern` (one `%d`) stands for, or -1.
static int64_t rankOfFileName(llvm::StringRef pattern, llvm::StringRef name) {
  size_t at = pattern.find("%d");
  llvm::StringRef head = pattern.take_front(at),
                  tail = pattern.drop_front(at + 2);
  if (!name.consume_front(head) || !name.consume_back(tail) || name.empty() ||
      !llvm::all_of(name, [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  int64_t r;
  return name.getAsInteger(10, r) ? -1 : r;
}

/// Staging directories of runs that were killed (SIGKILL leaves no chance
/// to clean up): `.stage-partial-<pid>` whose process is gone.
static void removeAbandonedStaging(const std::string &dir) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    int pid;
    if (!name.consume_front(".stage-partial-") || name.getAsInteger(10, pid) ||
        pid <= 0)
      continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH)
      continue; // a run still writing here
    (void)llvm::sys::fs::remove_directories(it->path());
  }
}

/// Rank files of an earlier, larger set in `dir` (ranks `n` and beyond of
/// the same name pattern): left there, they would join the new set.
static void removeStaleRanks(const std::string &dir, llvm::StringRef pattern,
                             int64_t n) {
  std::error_code ec;
  std::vector<std::string> stale;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (rankOfFileName(pattern, llvm::sys::path::filename(it->path())) >= n)
      stale.push_back(it->path());
  for (const std::string &f : stale)
    (void)llvm::sys::fs::remove(f);
}

namespace {
std::atomic<bool> interrupted{false};
extern "C" void onSignal(int) { interrupted = true; }

/// Installs SIGINT/SIGTERM handlers for the duration of a write, so an
/// interrupt stops the workers and the partial set is removed, and ignores
/// SIGXFSZ, so a file-size limit fails the write (EFBIG) like a full disk
/// instead of killing the process halfway.
class SignalGuard {
public:
  SignalGuard() {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = onSignal;
    sigaction(SIGINT, &sa, &oldInt);
    sigaction(SIGTERM, &sa, &oldTerm);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGXFSZ, &sa, &oldFileSize);
    interrupted = false;
  }
  ~SignalGuard() {
    sigaction(SIGINT, &oldInt, nullptr);
    sigaction(SIGTERM, &oldTerm, nullptr);
    sigaction(SIGXFSZ, &oldFileSize, nullptr);
  }

private:
  struct sigaction oldInt, oldTerm, oldFileSize;
};

/// Writes `data` to `path`; an error message naming the file as `shownAs`
/// (its final name, not the staging one) on failure.
std::string writeFile(const std::string &path, const std::string &data,
                      const std::string &shownAs) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return "cannot create " + shownAs + ": " + strerror(errno);
  const char *p = data.data();
  size_t left = data.size();
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      std::string err = "cannot write " + shownAs + ": " + strerror(errno);
      ::close(fd);
      return err;
    }
    p += n;
    left -= size_t(n);
  }
  if (::close(fd) != 0)
    return "cannot write " + shownAs + ": " + strerror(errno);
  return "";
}
} // namespace

/// A human-readable byte count: 3.2 GiB.
static std::string bytesText(double bytes) {
  const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5)
    bytes /= 1024, ++u;
  std::string s;
  llvm::raw_string_ostream(s)
      << llvm::format(u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return s;
}

/// The set's size before it is written: ranks spread over [first, last)
/// encoded (ranks differ by pipeline stage, which the rank order runs
/// through slowest), the largest file and the total at the mean; refused
/// above the limits or the free space where it would go.
static LogicalResult checkSetSize(const TraceSet &set, const WriteOptions &o,
                                  int64_t first, int64_t last, Location loc) {
  constexpr int64_t kSamples = 8;
  int64_t n = last - first;
  double largest = 0, sum = 0;
  int64_t sampled = 0;
  std::string buf;
  for (int64_t i = 0; i < std::min(n, kSamples); ++i) {
    int64_t r =
        first + (n == 1 ? 0 : i * (n - 1) / (std::min(n, kSamples) - 1));
    buf.clear();
    set.encodeRank(r, buf);
    largest = std::max(largest, double(buf.size()));
    sum += double(buf.size());
    ++sampled;
  }
  double total = sum / double(sampled) * double(n);
  if (largest > o.maxBytesPerRank)
    return emitError(loc) << "a rank's trace would be about "
                          << bytesText(largest) << ", more than the limit of "
                          << bytesText(o.maxBytesPerRank)
                          << " (--max-trace-bytes-per-rank); a smaller "
                             "binding (layers, micro-batches, decode steps) "
                             "or a larger limit";
  if (total > o.maxTotalBytes)
    return emitError(loc) << "the " << n << " traces would be about "
                          << bytesText(total)
                          << " in all, more than the limit of "
                          << bytesText(o.maxTotalBytes)
                          << " (--max-trace-bytes); fewer ranks (--ranks=), "
                             "a smaller binding or a larger limit";
  if (o.encodeOnly)
    return success();
  // The free space where the files go (the directory may not exist yet).
  llvm::StringRef d = o.dir;
  while (!d.empty() && !llvm::sys::fs::exists(d))
    d = llvm::sys::path::parent_path(d);
  llvm::ErrorOr<llvm::sys::fs::space_info> space =
      llvm::sys::fs::disk_space(d.empty() ? "." : d);
  if (space && total > double(space->available))
    return emitError(loc) << "the " << n << " traces would be about "
                          << bytesText(total) << " but " << o.dir << " has "
                          << bytesText(double(space->available)) << " free";
  return success();
}

/// One function: the staging directory, the workers, the renames and the
/// clean-up on any failure or signal are one transaction.
FailureOr<WriteStats> mlir::stage::chakra::writeTraceSet(const TraceSet &set,
                                                         const WriteOptions &o,
                                                         Location loc) {
  int64_t n = set.getNumRanks();
  int64_t first = o.first, last = o.last < 0 ? n : o.last;
  if (first < 0 || first >= last || last > n)
    return emitError(loc) << "--ranks=" << o.first << ":" << o.last
                          << " is not a range within the " << n << " ranks";
  if (llvm::StringRef(o.name).count("%d") != 1)
    return emitError(loc) << "--output-name=" << o.name
                          << " must contain %d once (the rank)";
  if (llvm::StringRef(o.name).find_first_of("/\\") != llvm::StringRef::npos ||
      llvm::StringRef(o.name).starts_with("."))
    return emitError(loc) << "--output-name=" << o.name
                          << " must be a file name inside --output-dir (no "
                             "directory, not starting with '.')";

  if (failed(checkSetSize(set, o, first, last, loc)))
    return failure();

  WriteStats stats;
  stats.ranks = last - first;
  stats.groupsFile = getGroupsFileName(o.name);
  // From before the staging directory exists: an interrupt at any point
  // lets the run remove what it wrote.
  SignalGuard guard;
  std::string staging;
  // A failed run leaves the file system as it found it: without the
  // staging directory and without the directories this run created.
  SmallVector<std::string> created; // deepest first
  auto abandon = [&](const llvm::Twine &why) -> FailureOr<WriteStats> {
    if (!staging.empty())
      (void)llvm::sys::fs::remove_directories(staging);
    for (const std::string &dir : created)
      if (llvm::sys::fs::remove(dir)) // not empty: someone else's now
        break;
    return emitError(loc) << why;
  };
  if (!o.encodeOnly) {
    for (llvm::StringRef d = o.dir; !d.empty() && !llvm::sys::fs::exists(d);
         d = llvm::sys::path::parent_path(d))
      created.push_back(d.str());
    if (std::error_code ec = llvm::sys::fs::create_directories(o.dir)) {
      created.clear();
      return abandon("cannot create the output directory " + o.dir + ": " +
                     ec.message());
    }
    removeAbandonedStaging(o.dir);
    std::string dir = o.dir + "/.stage-partial-" + std::to_string(::getpid());
    if (std::error_code ec = llvm::sys::fs::create_directory(dir))
      return abandon("cannot write to the output directory " + o.dir + ": " +
                     ec.message());
    staging = dir;
  }

  unsigned threads = o.threads ? o.threads : std::thread::hardware_concurrency();
  threads = std::max(1u, std::min<unsigned>(threads, unsigned(last - first)));
  // Each worker creates its files in a directory of its own: creating a
  // file locks its directory, and wherever creating is slow, workers
  // sharing one would take turns.
  auto threadDir = [&](unsigned t) {
    return staging + "/" + std::to_string(t);
  };
  if (!o.encodeOnly)
    for (unsigned t = 0; t < threads; ++t)
      if (std::error_code ec = llvm::sys::fs::create_directory(threadDir(t)))
        return abandon("cannot write to the output directory " + o.dir + ": " +
                       ec.message());
  // writer[r - first]: the worker that wrote rank r, hence its directory.
  std::vector<uint32_t> writer(o.encodeOnly ? 0 : last - first);
  std::atomic<int64_t> next{first};
  std::atomic<uint64_t> total{0};
  std::mutex errorLock;
  std::string error;
  auto worker = [&](unsigned self) {
    std::string buf;
    std::string dir = o.encodeOnly ? "" : threadDir(self);
    while (!interrupted) {
      int64_t r = next++;
      if (r >= last)
        return;
      buf.clear();
      set.encodeRank(r, buf);
      total += buf.size();
      if (o.encodeOnly)
        continue;
      writer[r - first] = self;
      std::string file = rankFileName(o.name, r);
      std::string err = writeFile(dir + "/" + file, buf, o.dir + "/" + file);
      if (!err.empty()) {
        std::lock_guard<std::mutex> lock(errorLock);
        if (error.empty())
          error = err;
        interrupted = true;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back(worker, t);
  for (std::thread &t : pool)
    t.join();
  stats.bytes = total;

  if (!error.empty())
    return abandon(error);
  if (interrupted)
    return abandon("interrupted: no trace was written");
  if (o.encodeOnly)
    return stats;

  std::string groups;
  {
    llvm::raw_string_ostream os(groups);
    set.writeGroups(os);
  }
  if (std::string err = writeFile(staging + "/" + stats.groupsFile, groups,
                                  o.dir + "/" + stats.groupsFile);
      !err.empty())
    return abandon(err);
  // Every file is complete: move them into place.
  SmallVector<std::string> moved;
  auto place = [&](const std::string &from,
                   const std::string &file) -> std::string {
    std::string to = o.dir + "/" + file;
    if (std::error_code ec = llvm::sys::fs::rename(from, to))
      return "cannot move " + from + " to " + to + ": " + ec.message();
    moved.push_back(to);
    return "";
  };
  std::string err;
  for (int64_t r = first; r < last && err.empty(); ++r) {
    std::string file = rankFileName(o.name, r);
    err = place(threadDir(writer[r - first]) + "/" + file, file);
  }
  if (err.empty())
    err = place(staging + "/" + stats.groupsFile, stats.groupsFile);
  if (!err.empty()) {
    for (const std::string &f : moved)
      (void)llvm::sys::fs::remove(f);
    return abandon(err);
  }
  (void)llvm::sys::fs::remove_directories(staging);
  removeStaleRanks(o.dir, o.name, n);
  return stats;
}
