//===- Show.cpp - One rank's trace, for a person --------------------------===//

#include "Stage/Target/ChakraVerify/Show.h"

#include "SetFiles.h"
#include "TraceReader.h"
#include "TraceSet.h"

#include "Stage/Support/JsonLimits.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>

using namespace stage::trace;

namespace {

const char *kindName(uint64_t type) {
  switch (type) {
  case MetadataNode:
    return "metadata";
  case MemLoad:
    return "mem_load";
  case MemStore:
    return "mem_store";
  case CompNode:
    return "compute";
  case SendNode:
    return "send";
  case RecvNode:
    return "recv";
  case CollNode:
    return "collective";
  default:
    return "invalid";
  }
}

/// "0, 1" or, for many, "0, 8, 16, ... (64 ranks)".
std::string members(const std::vector<int64_t> &ranks) {
  std::string s;
  size_t shown = ranks.size() <= 8 ? ranks.size() : 3;
  for (size_t i = 0; i < shown; ++i)
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (shown < ranks.size())
    s += ", ... (" + std::to_string(ranks.size()) + " ranks)";
  return s;
}

struct Shower {
  const TraceFile &file;
  const std::map<int64_t, std::vector<int64_t>> &groups;
  /// Per node position, the ids of the nodes that wait for it.
  std::vector<std::vector<uint64_t>> waiters;

  const std::vector<int64_t> *groupOf(const Node &n) const {
    if (!n.pgName.present || n.pgName.text.empty())
      return nullptr;
    int64_t id;
    if (llvm::StringRef(n.pgName.text.data(), n.pgName.text.size())
            .getAsInteger(10, id))
      return nullptr;
    auto it = groups.find(id);
    return it == groups.end() ? nullptr : &it->second;
  }

  void text(llvm::raw_ostream &os, size_t i, bool withWaiters) const {
    const Node &n = file.nodes[i];
    os << llvm::format("%8llu  %-10s  ", (unsigned long long)n.id,
                       kindName(n.type))
       << std::string(n.name);
    switch (n.type) {
    case CompNode:
      os << ": " << n.numOps.raw << " FLOPs, " << n.tensorSize.raw << " B";
      break;
    case CollNode: {
      os << ": " << commTypeName(n.commType.raw) << " of " << n.commSize.raw
         << " B";
      std::string pg(n.pgName.text);
      if (!n.pgName.present || pg.empty())
        os << " over all ranks";
      else if (const std::vector<int64_t> *g = groupOf(n))
        os << " in group " << pg << " (ranks " << members(*g) << ")";
      else
        os << " in group " << pg << " (not in the groups file)";
      break;
    }
    case SendNode:
    case RecvNode:
      os << ": " << n.commSize.raw << " B "
         << (n.type == SendNode ? "to rank " : "from rank ")
         << asInt32(n.type == SendNode ? n.commDst.raw : n.commSrc.raw)
         << ", tag " << asInt32(n.commTag.raw);
      break;
    default:
      break;
    }
    if (n.durationMicros)
      os << ", " << n.durationMicros << " us";
    const uint64_t *deps = file.depsOf(n);
    if (n.depsCount) {
      os << "; after";
      for (uint32_t k = 0; k < n.depsCount; ++k)
        os << (k ? ", " : " ") << deps[k];
    }
    if (withWaiters && !waiters[i].empty()) {
      os << "; before";
      for (auto [k, id] : llvm::enumerate(waiters[i]))
        os << (k ? ", " : " ") << id;
    }
    os << "\n";
  }

  void json(llvm::json::OStream &j, size_t i, bool withWaiters) const {
    const Node &n = file.nodes[i];
    j.object([&] {
      j.attribute("id", int64_t(n.id));
      j.attribute("name", std::string(n.name));
      j.attribute("kind", kindName(n.type));
      if (n.type == CompNode) {
        j.attribute("flops", int64_t(n.numOps.raw));
        j.attribute("tensor_bytes", int64_t(n.tensorSize.raw));
      }
      if (n.type == CollNode) {
        j.attribute("collective", commTypeName(n.commType.raw));
        j.attribute("bytes", int64_t(n.commSize.raw));
        if (n.pgName.present && !n.pgName.text.empty())
          j.attribute("group", std::string(n.pgName.text));
        if (const std::vector<int64_t> *g = groupOf(n))
          j.attributeArray("members", [&] {
            for (int64_t r : *g)
              j.value(r);
          });
      }
      if (n.type == SendNode || n.type == RecvNode) {
        j.attribute("bytes", int64_t(n.commSize.raw));
        j.attribute("src", asInt32(n.commSrc.raw));
        j.attribute("dst", asInt32(n.commDst.raw));
        j.attribute("tag", asInt32(n.commTag.raw));
      }
      if (n.durationMicros)
        j.attribute("duration_micros", int64_t(n.durationMicros));
      j.attributeArray("deps", [&] {
        const uint64_t *deps = file.depsOf(n);
        for (uint32_t k = 0; k < n.depsCount; ++k)
          j.value(int64_t(deps[k]));
      });
      if (withWaiters)
        j.attributeArray("waited_for_by", [&] {
          for (uint64_t id : waiters[i])
            j.value(int64_t(id));
        });
    });
  }
};

} // namespace

std::string stage::trace::showRank(const TraceSetOptions &o,
                                   const ShowOptions &s,
                                   llvm::raw_ostream &os) {
  // The checks every reader runs first: the set is whole (its manifest),
  // this rank's file is its own, the groups file is sound.
  Errors errors;
  SetFiles files;
  bool truncated;
  if (!findSetFiles(o, files, errors))
    return errors.take(truncated).front();
  if (s.rank < 0 || s.rank >= files.ranks)
    return "rank " + std::to_string(s.rank) + " is not one of the set's " +
           std::to_string(files.ranks) + " ranks";
  if (files.traces[s.rank].empty())
    return "rank " + std::to_string(s.rank) + " has no file " + o.dir + "/" +
           o.prefix + "." + std::to_string(s.rank) + ".et";
  const std::string &path = files.traces[s.rank];
  std::string problem;
  auto buf = readRankFile(o, files, s.rank, problem);
  if (!buf)
    return problem;
  TraceFile file;
  std::vector<std::string> problems = decodeTrace(path, buf->getBuffer(), file);
  if (!problems.empty())
    return problems.front();
  if (std::string p = checkRankIdentity(file, s.rank, files); !p.empty())
    return p;
  TraceSet set;
  if (files.groupsExist) {
    auto groups = readGroupsFile(o, files, problem);
    if (!groups)
      return problem;
    loadGroups(groups->getBuffer(), files.groups, files.ranks, set, errors);
    if (errors.size())
      return errors.take(truncated).front();
  } else if (llvm::any_of(file.nodes, [](const Node &n) {
               return n.pgName.present && !n.pgName.text.empty();
             })) {
    return path + ": collectives name groups but there is no groups file " +
           files.groups;
  }
  const std::map<int64_t, std::vector<int64_t>> &groups = set.groups;

  Shower show{file, groups, {}};
  std::vector<size_t> picked;
  if (s.node) {
    auto it = llvm::find_if(file.nodes,
                            [&](const Node &n) { return n.id == *s.node; });
    if (it == file.nodes.end())
      return path + ": rank " + std::to_string(s.rank) + " has no node " +
             std::to_string(*s.node);
    size_t at = size_t(it - file.nodes.begin());
    picked.push_back(at);
    show.waiters.resize(file.nodes.size());
    for (const Node &n : file.nodes) {
      const uint64_t *deps = file.depsOf(n);
      for (uint32_t k = 0; k < n.depsCount; ++k)
        if (deps[k] == *s.node)
          show.waiters[at].push_back(n.id);
    }
  }
  auto each = [&](const std::function<void(size_t)> &fn) {
    if (s.node)
      fn(picked.front());
    else
      for (size_t i = 0; i < file.nodes.size(); ++i)
        fn(i);
  };
  bool waiters = s.node.has_value();
  if (s.json) {
    llvm::json::OStream j(os, 1);
    j.object([&] {
      j.attribute("rank", s.rank);
      j.attribute("file", path);
      j.attribute("version", file.version);
      j.attribute("node_count", int64_t(file.nodes.size()));
      j.attributeArray(
          "nodes", [&] { each([&](size_t i) { show.json(j, i, waiters); }); });
    });
    os << "\n";
    return "";
  }
  os << "rank " << s.rank << ": " << file.nodes.size() << " nodes in " << path
     << " (Chakra " << file.version << ")\n";
  each([&](size_t i) { show.text(os, i, waiters); });
  return "";
}
