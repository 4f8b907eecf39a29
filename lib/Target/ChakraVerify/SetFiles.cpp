//===- SetFiles.cpp - Which files make a trace set, and are they it -------===//

#include "SetFiles.h"

#include "Stage/Support/SafeFiles.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace stage;
using namespace stage::trace;

namespace {
enum : unsigned { Int64Val = 9, StringVal = 29 };

std::string manifestPath(const TraceSetOptions &o) {
  return o.dir + "/" + o.prefix + ".manifest.json";
}

/// The file's entry in the manifest did not match what is on disk.
std::string mismatch(const std::string &path, llvm::StringRef bytes,
                     const ManifestEntry &e) {
  std::string digest = fileDigest(bytes);
  if (bytes.size() == e.bytes && digest == e.digest)
    return "";
  return path + " does not match the manifest: it is " +
         std::to_string(bytes.size()) + " bytes with digest " + digest +
         ", the manifest names " + std::to_string(e.bytes) +
         " bytes with digest " + e.digest +
         " (the file was changed, or belongs to another set)";
}
} // namespace

std::unique_ptr<llvm::MemoryBuffer>
stage::trace::readSetFile(const TraceSetOptions &o, const std::string &path,
                          std::string &error, bool *missing) {
  if (!o.files)
    return files::readRegularFile(path, o.maxFileBytes, error, missing);
  auto it = o.files->find(llvm::sys::path::filename(path).str());
  if (missing)
    *missing = it == o.files->end();
  if (it == o.files->end()) {
    error = "cannot read " + path + ": No such file or directory";
    return nullptr;
  }
  return llvm::MemoryBuffer::getMemBuffer(it->second, path,
                                          /*RequiresNullTerminator=*/false);
}

bool stage::trace::findSetFiles(const TraceSetOptions &o, SetFiles &out,
                                Errors &errors) {
  if (!o.files && !llvm::sys::fs::is_directory(o.dir)) {
    std::error_code ec =
        llvm::sys::fs::exists(o.dir)
            ? std::make_error_code(std::errc::not_a_directory)
            : std::make_error_code(std::errc::no_such_file_or_directory);
    errors.add("cannot read the directory " + o.dir + ": " + ec.message());
    return false;
  }
  if (!o.withoutManifest) {
    std::string path = manifestPath(o), error;
    bool missing = false;
    auto buf = readSetFile(o, path, error, &missing);
    if (missing) {
      errors.add("the trace set's manifest is missing: no " + o.prefix +
                 ".manifest.json in " + o.dir +
                 ". The set is incomplete (a write was interrupted or is "
                 "under way) or was not written by stage; a set of another "
                 "generator is checked with --without-manifest");
      return false;
    }
    if (!buf) {
      errors.add(error);
      return false;
    }
    std::optional<TraceManifest> m =
        TraceManifest::parse(buf->getBuffer(), error);
    if (!m) {
      errors.add(path + ": " + error);
      return false;
    }
    if (!o.groups.empty()) {
      errors.add("--groups=" + o.groups +
                 ": the manifest names the set's "
                 "groups file (" +
                 m->groupsFile +
                 "); --groups is for a set without one (--without-manifest)");
      return false;
    }
    if (!m->isComplete()) {
      int64_t firstMissing = 0;
      while (m->traces.count(firstMissing))
        ++firstMissing;
      errors.add(path + " lists " + std::to_string(m->traces.size()) +
                 " of the set's " + std::to_string(m->ranks) + " ranks (rank " +
                 std::to_string(firstMissing) +
                 " is the first missing): the set is incomplete, a slice "
                 "(--ranks=A:B) is not written yet");
      return false;
    }
    // The set's other files (the simulator's configuration): small, read
    // here whole.
    bool whole = true;
    for (const auto &[name, entry] : m->extras) {
      std::string extra = o.dir + "/" + name;
      auto bytes = readSetFile(o, extra, error);
      if (!bytes) {
        errors.add(error);
        whole = false;
      } else if (std::string p = mismatch(extra, bytes->getBuffer(), entry);
                 !p.empty()) {
        errors.add(p);
        whole = false;
      }
    }
    if (!whole)
      return false;
    out.ranks = m->ranks;
    for (int64_t r = 0; r < m->ranks; ++r)
      out.traces.push_back(o.dir + "/" + m->traceFile(r));
    out.groups = o.dir + "/" + m->groupsFile;
    out.groupsExist = true;
    out.manifest = std::move(m);
    return true;
  }

  std::error_code ec;
  std::set<int64_t> found;
  std::string head = o.prefix + ".";
  auto addRank = [&](llvm::StringRef name) {
    int64_t r;
    if (name.consume_front(head) && name.consume_back(".et") &&
        !name.getAsInteger(10, r) && r >= 0)
      found.insert(r);
  };
  if (o.files)
    for (const auto &file : *o.files)
      addRank(file.first);
  else
    for (llvm::sys::fs::directory_iterator it(o.dir, ec), end; it != end && !ec;
         it.increment(ec))
      addRank(llvm::sys::path::filename(it->path()));
  if (ec) {
    errors.add("cannot read the directory " + o.dir + ": " + ec.message());
    return false;
  }
  if (found.empty()) {
    errors.add("no trace files " + o.prefix + ".<rank>.et in " + o.dir);
    return false;
  }
  int64_t n = *found.rbegin() + 1;
  out.ranks = n;
  out.traces.resize(n);
  for (int64_t r = 0; r < n; ++r) {
    if (found.count(r))
      out.traces[r] = o.dir + "/" + o.prefix + "." + std::to_string(r) + ".et";
    else
      errors.add("rank " + std::to_string(r) + " has no file " + o.prefix +
                 "." + std::to_string(r) + ".et: every rank 0.." +
                 std::to_string(n - 1) + " needs one");
  }
  out.groups = o.groups.empty() ? o.dir + "/" + o.prefix + ".json" : o.groups;
  out.groupsExist =
      o.files ? o.files->count(llvm::sys::path::filename(out.groups).str()) != 0
              : llvm::sys::fs::exists(out.groups);
  if (!out.groupsExist && !o.groups.empty())
    errors.add("the groups file " + out.groups + " does not exist");
  return true;
}

std::unique_ptr<llvm::MemoryBuffer>
stage::trace::readRankFile(const TraceSetOptions &o, const SetFiles &files,
                           int64_t rank, std::string &problem) {
  const std::string &path = files.traces[rank];
  auto buf = readSetFile(o, path, problem);
  if (!buf || !files.manifest)
    return buf;
  problem = mismatch(path, buf->getBuffer(), files.manifest->traces.at(rank));
  return problem.empty() ? std::move(buf) : nullptr;
}

std::unique_ptr<llvm::MemoryBuffer>
stage::trace::readGroupsFile(const TraceSetOptions &o, const SetFiles &files,
                             std::string &problem) {
  auto buf = readSetFile(o, files.groups, problem);
  if (!buf || !files.manifest)
    return buf;
  problem = mismatch(files.groups, buf->getBuffer(), files.manifest->groups);
  return problem.empty() ? std::move(buf) : nullptr;
}

std::string stage::trace::checkRankIdentity(const TraceFile &f, int64_t rank,
                                            const SetFiles &files) {
  if (f.rank.present &&
      (f.rank.member != Int64Val || int64_t(f.rank.raw) != rank))
    return f.path + " is not rank " + std::to_string(rank) +
           "'s file: its metadata names rank " +
           (f.rank.member == Int64Val ? std::to_string(int64_t(f.rank.raw))
                                      : std::string("(not an int64_val)"));
  if (f.numRanks.present &&
      (f.numRanks.member != Int64Val || int64_t(f.numRanks.raw) != files.ranks))
    return f.path + " belongs to a set of " +
           (f.numRanks.member == Int64Val
                ? std::to_string(int64_t(f.numRanks.raw))
                : std::string("(not an int64_val)")) +
           " ranks, not of this set of " + std::to_string(files.ranks);
  if (!files.manifest)
    return "";
  if (!f.traceSet.present || f.traceSet.member != StringVal)
    return f.path +
           " carries no trace-set identity: it is not a file of the "
           "set the manifest names (" +
           files.manifest->setId + ")";
  if (f.traceSet.text != files.manifest->setId)
    return "the ranks carry different identities: " + f.path + " (rank " +
           std::to_string(rank) + ") is of trace set " +
           std::string(f.traceSet.text) + ", the manifest's set is " +
           files.manifest->setId;
  return "";
}
