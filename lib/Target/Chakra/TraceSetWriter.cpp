//===- TraceSetWriter.cpp - Writing every rank's file ---------------------===//

#include "TraceSetWriter.h"

#include "OutputDirectory.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>

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

namespace {
std::atomic<bool> interrupted{false};
extern "C" void onSignal(int) { interrupted = true; }

/// Installs SIGINT/SIGTERM/SIGHUP handlers for the duration of a write, so
/// an interrupt stops the workers and the partial set is removed, and ignores
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
    sigaction(SIGHUP, &sa, &oldHangUp);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGXFSZ, &sa, &oldFileSize);
    interrupted = false;
  }
  ~SignalGuard() {
    sigaction(SIGINT, &oldInt, nullptr);
    sigaction(SIGTERM, &oldTerm, nullptr);
    sigaction(SIGHUP, &oldHangUp, nullptr);
    sigaction(SIGXFSZ, &oldFileSize, nullptr);
  }

private:
  struct sigaction oldInt, oldTerm, oldHangUp, oldFileSize;
};

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

/// One function: the staging directory, the workers and the publication
/// are one transaction; any failure or signal before the publication
/// leaves the directory as it was.
FailureOr<WriteStats> mlir::stage::chakra::writeTraceSet(const TraceSet &set,
                                                         const WriteOptions &o,
                                                         Location loc) {
  int64_t n = set.getNumRanks();
  int64_t first = o.first, last = o.last < 0 ? n : o.last;
  if (first < 0 || first >= last || last > n)
    return emitError(loc) << "--ranks=" << o.first << ":" << o.last
                          << " is not a range within the " << n << " ranks";
  if (std::string why = checkTraceName(o.name); !why.empty())
    return emitError(loc) << "--output-name=" << o.name << " " << why;

  if (failed(checkSetSize(set, o, first, last, loc)))
    return failure();

  WriteStats stats;
  stats.ranks = last - first;
  stats.groupsFile = getGroupsFileName(o.name);
  TraceManifest manifest;
  manifest.setId = set.getIdentity();
  manifest.ranks = n;
  manifest.traceName = o.name;
  manifest.groupsFile = stats.groupsFile;
  // From before the staging directory exists: an interrupt at any point
  // before the publication lets the run remove what it wrote.
  SignalGuard guard;
  std::unique_ptr<OutputDirectory> out;
  if (!o.encodeOnly) {
    auto opened = OutputDirectory::open(
        o.dir, getManifestFileName(stats.groupsFile), loc);
    if (failed(opened))
      return failure();
    out = std::move(*opened);
  }

  unsigned threads = o.threads ? o.threads : std::thread::hardware_concurrency();
  threads = std::max(1u, std::min<unsigned>(threads, unsigned(last - first)));
  // Each worker creates its files in a directory of its own: creating a
  // file locks its directory, and wherever creating is slow, workers
  // sharing one would take turns.
  std::vector<int> workerDirs(threads, -1);
  if (out)
    for (unsigned t = 0; t < threads; ++t) {
      std::string err;
      if ((workerDirs[t] = out->createWorkerDir(t, err)) < 0)
        return emitError(loc) << err;
    }
  // Per rank: the directory of the worker that wrote it, and its entry.
  std::vector<int> writerDir(out ? last - first : 0);
  std::vector<ManifestEntry> entries(out ? last - first : 0);
  std::atomic<int64_t> next{first};
  std::atomic<uint64_t> total{0};
  std::mutex errorLock;
  std::string error;
  auto worker = [&](unsigned self) {
    std::string buf;
    while (!interrupted) {
      int64_t r = next++;
      if (r >= last)
        return;
      buf.clear();
      set.encodeRank(r, buf);
      total += buf.size();
      if (!out)
        continue;
      writerDir[r - first] = workerDirs[self];
      entries[r - first] = {buf.size(), fileDigest(buf)};
      std::string err =
          out->writeFile(workerDirs[self], manifest.traceFile(r), buf);
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
    return emitError(loc) << error;
  if (interrupted)
    return emitError(loc) << "interrupted: no trace was written";
  if (!out)
    return stats;

  std::string groups;
  {
    llvm::raw_string_ostream os(groups);
    set.writeGroups(os);
  }
  if (std::string err =
          out->writeFile(out->getStagingFd(), stats.groupsFile, groups);
      !err.empty())
    return emitError(loc) << err;
  manifest.groups = {groups.size(), fileDigest(groups)};
  for (const auto &[name, contents] : o.extras) {
    if (std::string err = out->writeFile(out->getStagingFd(), name, contents);
        !err.empty())
      return emitError(loc) << err;
    manifest.extras[name] = {contents.size(), fileDigest(contents)};
  }
  for (int64_t r = first; r < last; ++r)
    manifest.traces.emplace(r, std::move(entries[r - first]));
  if (failed(out->publish(manifest, first, writerDir, loc)))
    return failure();
  return stats;
}
