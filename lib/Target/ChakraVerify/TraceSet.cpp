//===- TraceSet.cpp - A trace set, loaded and checked rank by rank --------===//

#include "TraceSet.h"

#include "SetFiles.h"
#include "TraceReader.h"

#include "Stage/Support/JsonLimits.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <unordered_map>

using namespace stage::trace;

enum : unsigned {
  Int32Val = 7, Int64Val = 9, Uint64Val = 13, BoolVal = 27, StringVal = 29
};

static const char *memberName(unsigned m) {
  switch (m) {
  case 3: return "double_val";
  case 5: return "float_val";
  case 7: return "int32_val";
  case 9: return "int64_val";
  case 11: return "uint32_val";
  case 13: return "uint64_val";
  case 15: return "sint32_val";
  case 17: return "sint64_val";
  case 27: return "bool_val";
  case 29: return "string_val";
  default: return "another member";
  }
}

const char *stage::trace::commTypeName(uint64_t t) {
  static const char *const names[] = {
      "ALL_REDUCE", "REDUCE", "ALL_GATHER", "GATHER", "SCATTER",
      "BROADCAST", "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK",
      "BARRIER"};
  return t < 10 ? names[t] : "an unknown type";
}

void Errors::add(std::string e) {
  std::lock_guard<std::mutex> lock(m);
  if (list.size() < kMax)
    list.push_back(std::move(e));
  else
    truncated = true;
}

void Errors::merge(Errors &other) {
  bool t;
  for (std::string &e : other.take(t))
    add(std::move(e));
  std::lock_guard<std::mutex> lock(m);
  truncated |= t;
}

std::vector<std::string> Errors::take(bool &t) {
  t = truncated;
  return std::move(list);
}

size_t Errors::size() {
  std::lock_guard<std::mutex> lock(m);
  return list.size();
}

std::string CommNode::where(int64_t rank) const {
  return "rank " + std::to_string(rank) + " node " + std::to_string(id) +
         (!name || name->empty() ? "" : " '" + *name + "'");
}

bool ClassGraph::sameStructure(const ClassGraph &o) const {
  if (numNodes != o.numNodes || type != o.type || succStart != o.succStart ||
      succ != o.succ || commOf != o.commOf || commNames != o.commNames ||
      seconds != o.seconds || comm.size() != o.comm.size())
    return false;
  for (size_t k = 0; k < comm.size(); ++k) {
    const CommNode &a = comm[k], &b = o.comm[k];
    if (a.index != b.index || a.id != b.id || a.type != b.type ||
        a.tag != b.tag || a.size != b.size || a.commType != b.commType)
      return false;
  }
  return true;
}

uint64_t ClassGraph::structureHash() const {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](uint64_t v) {
    h = (h ^ v) * 0x100000001b3ull;
    h ^= h >> 29;
  };
  mix(numNodes);
  for (uint8_t t : type)
    mix(t);
  for (uint32_t v : succ)
    mix(v);
  for (uint32_t v : succStart)
    mix(v);
  for (const CommNode &c : comm) {
    mix(c.id);
    mix(uint64_t(c.tag));
    mix(uint64_t(c.size));
    mix(c.commType);
  }
  for (const std::string &name : commNames)
    mix(std::hash<std::string>()(name));
  return h;
}

void stage::trace::parallelFor(int64_t n, unsigned threads,
                               const std::function<void(int64_t)> &body) {
  if (!threads)
    threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::max<unsigned>(1, std::min<int64_t>(threads, n));
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (int64_t i = next++; i < n; i = next++)
      body(i);
  };
  // The calling thread is one of the workers: one thread starts none.
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (auto &t : pool)
    t.join();
}

namespace {

std::string where(int64_t rank, const Node &n) {
  return "rank " + std::to_string(rank) + " node " + std::to_string(n.id) +
         (n.name.empty() ? "" : " '" + std::string(n.name) + "'");
}

/// Node ids to positions: our traces number nodes 0, 1, ... (a vector);
/// others may not (a hash map).
class IdIndex {
public:
  explicit IdIndex(const std::vector<Node> &nodes) {
    dense = true;
    for (uint32_t i = 0; i < nodes.size() && dense; ++i)
      dense = nodes[i].id == i;
    if (!dense)
      for (uint32_t i = 0; i < nodes.size(); ++i)
        if (!map.emplace(nodes[i].id, i).second)
          duplicates.push_back(i);
    size = nodes.size();
  }
  /// The position of node `id`, or -1.
  int64_t find(uint64_t id) const {
    if (dense)
      return id < size ? int64_t(id) : -1;
    auto it = map.find(id);
    return it == map.end() ? -1 : int64_t(it->second);
  }
  std::vector<uint32_t> duplicates;

private:
  bool dense;
  size_t size;
  std::unordered_map<uint64_t, uint32_t> map;
};

} // namespace

void stage::trace::loadGroups(llvm::StringRef text, const std::string &path,
                              int64_t n, TraceSet &set, Errors &errors) {
  llvm::Expected<llvm::json::Value> json = sym::parseJsonWithinLimits(text);
  if (!json) {
    errors.add(path + ": malformed JSON: " + llvm::toString(json.takeError()));
    return;
  }
  const llvm::json::Object *obj = json->getAsObject();
  if (!obj) {
    errors.add(path + ": the groups file must be one JSON object");
    return;
  }
  set.hasGroups = true;
  for (const auto &[key, value] : *obj) {
    int64_t id;
    llvm::StringRef k = key;
    if (k.getAsInteger(10, id) || id <= 0 || std::to_string(id) != k.str()) {
      errors.add(path + ": group key \"" + k.str() +
                 "\" is not a positive decimal integer (\"0\" aborts ASTRA-sim)");
      continue;
    }
    const llvm::json::Array *members = value.getAsArray();
    if (!members) {
      errors.add(path + ": group " + k.str() + " is not a list of ranks");
      continue;
    }
    std::vector<int64_t> list;
    std::set<int64_t> seen;
    for (const llvm::json::Value &m : *members) {
      std::optional<int64_t> r = m.getAsInteger();
      if (!r || *r < 0 || *r >= n) {
        errors.add(path + ": group " + k.str() + " lists " +
                   (r ? std::to_string(*r) : std::string("a non-integer")) +
                   ", not a rank of 0.." + std::to_string(n - 1));
        continue;
      }
      if (!seen.insert(*r).second)
        errors.add(path + ": group " + k.str() + " lists rank " +
                   std::to_string(*r) + " twice");
      list.push_back(*r);
    }
    if (list.empty()) {
      // No member could issue its collectives: ASTRA-sim cannot build it.
      errors.add(path + ": group " + k.str() + " has no ranks");
      continue;
    }
    std::sort(list.begin(), list.end());
    set.groups[id] = std::move(list);
  }
}

namespace {

/// Checks one rank's file on its own and keeps what the cross-rank checks
/// and the statistics need. One function: a single pass over the nodes
/// checks each and records it.
void checkRank(const TraceFile &f, int64_t rank, const TraceSet &set, int64_t n,
               const TraceSetOptions &o, ClassGraph &g, RankGraph &rg,
               Errors &errors) {
  rg.path = f.path;
  g.numNodes = uint32_t(f.nodes.size());
  if (f.hasMetadata && f.nodes.empty())
    errors.add(f.path + ": rank " + std::to_string(rank) +
               " has no nodes (a truncated file, or a rank left out)");
  IdIndex byId(f.nodes);
  for (uint32_t i : byId.duplicates)
    errors.add(where(rank, f.nodes[i]) +
               ": duplicate node id (only the last one would survive)");
  auto need = [&](const Node &node, const Attr &a, const char *name,
                  unsigned member) {
    if (!a.present) {
      errors.add(where(rank, node) + ": missing attribute " + name);
      return false;
    }
    if (a.member != member) {
      errors.add(where(rank, node) + ": " + name + " is a " +
                 memberName(a.member) + ", readers expect " + memberName(member) +
                 " (older readers silently read 0)");
      return false;
    }
    return true;
  };
  g.type.resize(g.numNodes);
  if (o.computeSeconds)
    g.seconds.assign(g.numNodes, 0);
  g.commOf.assign(g.numNodes, -1);
  g.indeg.assign(g.numNodes, 0);
  std::vector<uint32_t> succCount(g.numNodes, 0);
  static const char *const typeNames[] = {
      "invalid", "metadata", "mem_load", "mem_store",
      "compute", "send",     "recv",     "collective", "unknown"};
  int64_t typeCounts[9] = {};
  for (uint32_t i = 0; i < g.numNodes; ++i) {
    const Node &node = f.nodes[i];
    g.type[i] = uint8_t(std::min<uint64_t>(node.type, 255));
    ++typeCounts[std::min<uint64_t>(node.type, 8)];
    const uint64_t *deps = f.depsOf(node);
    for (uint32_t k = 0; k < node.depsCount; ++k) {
      int64_t at = byId.find(deps[k]);
      if (at < 0) {
        errors.add(where(rank, node) + ": depends on node " +
                   std::to_string(deps[k]) + ", which does not exist");
        continue;
      }
      ++succCount[at];
      ++g.indeg[i];
    }
    if (node.type == InvalidNode || node.type > CollNode) {
      errors.add(where(rank, node) + ": node type " + std::to_string(node.type) +
                 (node.type == InvalidNode ? " (INVALID_NODE: the rank never finishes)"
                                           : " is not a Chakra node type"));
      continue;
    }
    if (node.type == MetadataNode) {
      errors.add(where(rank, node) + ": METADATA_NODE aborts ASTRA-sim");
      continue;
    }
    if (need(node, node.isCpuOp, "is_cpu_op", BoolVal) && node.isCpuOp.raw &&
        node.type >= SendNode)
      errors.add(where(rank, node) + ": a communication node must have "
                                     "is_cpu_op false");
    CommNode c;
    c.index = i;
    c.id = node.id;
    c.type = uint8_t(node.type);
    switch (node.type) {
    case CompNode:
      need(node, node.numOps, "num_ops", Int64Val);
      if (need(node, node.tensorSize, "tensor_size", Uint64Val) &&
          node.tensorSize.raw == 0)
        errors.add(where(rank, node) +
                   ": tensor_size is 0 (the roofline divides by it: the rank stalls)");
      rg.stats.flops += node.numOps.raw;
      rg.stats.tensorBytes += node.tensorSize.raw;
      if (o.computeSeconds)
        g.seconds[i] = float(o.computeSeconds(
            node.numOps.raw, node.tensorSize.raw, node.durationMicros));
      break;
    case CollNode: {
      if (need(node, node.commType, "comm_type", Int64Val)) {
        uint64_t t = node.commType.raw;
        bool simulated = t == 0 || t == 2 || t == 6 || t == 7;
        bool waits = t == 5 && node.durationMicros;
        if (!simulated && !waits)
          errors.add(where(rank, node) + ": comm_type " + commTypeName(t) +
                     " aborts ASTRA-sim (it simulates ALL_REDUCE, ALL_GATHER, "
                     "ALL_TO_ALL and REDUCE_SCATTER)");
      }
      if (need(node, node.commSize, "comm_size", Int64Val) &&
          int64_t(node.commSize.raw) <= 0)
        errors.add(where(rank, node) + ": comm_size must be positive");
      c.commType = node.commType.raw;
      c.size = int64_t(node.commSize.raw);
      // Optional: its place in the group's sequence.
      c.tag = node.commTag.present && node.commTag.member == Int32Val
                  ? asInt32(node.commTag.raw)
                  : -1;
      rg.stats.collectiveBytes[commTypeName(c.commType)] += node.commSize.raw;
      if (node.pgName.present) {
        if (node.pgName.member != StringVal) {
          errors.add(where(rank, node) + ": pg_name is a " +
                     memberName(node.pgName.member) + ", readers expect string_val");
        } else if (!node.pgName.text.empty()) {
          rg.namesGroups = true;
          int64_t id;
          llvm::StringRef text(node.pgName.text.data(), node.pgName.text.size());
          if (text.getAsInteger(10, id) || !set.groups.count(id)) {
            if (set.hasGroups)
              errors.add(where(rank, node) + ": pg_name \"" + text.str() +
                         "\" names no group of the groups file");
            c.group = -1;
          } else {
            const std::vector<int64_t> &members = set.groups.at(id);
            if (!std::binary_search(members.begin(), members.end(), rank))
              errors.add(where(rank, node) + ": rank " + std::to_string(rank) +
                         " is not a member of group " + text.str());
            c.group = id;
          }
        }
      }
      break;
    }
    case SendNode:
    case RecvNode: {
      bool send = node.type == SendNode;
      bool ok = need(node, node.commSrc, "comm_src", Int32Val) &
                need(node, node.commDst, "comm_dst", Int32Val) &
                need(node, node.commTag, "comm_tag", Int32Val) &
                need(node, node.commSize, "comm_size", Int64Val);
      c.src = asInt32(node.commSrc.raw);
      c.dst = asInt32(node.commDst.raw);
      c.tag = asInt32(node.commTag.raw);
      c.size = int64_t(node.commSize.raw);
      (send ? rg.stats.sendBytes : rg.stats.recvBytes) += node.commSize.raw;
      if (!ok)
        break;
      if ((send ? c.src : c.dst) != rank)
        errors.add(where(rank, node) + ": a " + (send ? "send" : "receive") +
                   " on rank " + std::to_string(rank) + " has comm_" +
                   (send ? "src " : "dst ") +
                   std::to_string(send ? c.src : c.dst));
      int64_t peer = send ? c.dst : c.src;
      if (peer == rank)
        errors.add(where(rank, node) + ": sends to itself (aborts ASTRA-sim)");
      else if (peer < 0 || peer >= n)
        errors.add(where(rank, node) + ": peer rank " + std::to_string(peer) +
                   " does not exist (" + std::to_string(n) + " ranks)");
      if (c.tag < 0)
        errors.add(where(rank, node) + ": comm_tag " + std::to_string(c.tag) +
                   " is not in [0, 2^31)");
      if (c.size <= 0)
        errors.add(where(rank, node) + ": comm_size must be positive");
      break;
    }
    default:
      break;
    }
    if (node.type >= SendNode && node.type <= CollNode) {
      g.commOf[i] = int32_t(g.comm.size());
      g.commNames.emplace_back(node.name);
      rg.peers.push_back(int32_t(node.type == SendNode   ? c.dst
                                 : node.type == RecvNode ? c.src
                                                         : c.group));
      g.comm.push_back(c);
    }
  }
  for (unsigned t = 0; t < 9; ++t)
    if (typeCounts[t])
      rg.stats.nodes[typeNames[t]] = typeCounts[t];
  // Successors, in CSR form.
  g.succStart.assign(g.numNodes + 1, 0);
  for (uint32_t i = 0; i < g.numNodes; ++i)
    g.succStart[i + 1] = g.succStart[i] + succCount[i];
  g.succ.resize(g.succStart.back());
  std::vector<uint32_t> fill(g.succStart.begin(), g.succStart.end() - 1);
  for (uint32_t i = 0; i < g.numNodes; ++i) {
    const uint64_t *deps = f.depsOf(f.nodes[i]);
    for (uint32_t k = 0; k < f.nodes[i].depsCount; ++k)
      if (int64_t at = byId.find(deps[k]); at >= 0)
        g.succ[fill[at]++] = i;
  }
  // Cycles: the nodes of a cycle never run (ASTRA-sim skips them silently).
  std::vector<uint32_t> indeg = g.indeg, work;
  for (uint32_t i = 0; i < g.numNodes; ++i)
    if (!indeg[i])
      work.push_back(i);
  size_t seen = 0;
  while (!work.empty()) {
    uint32_t i = work.back();
    work.pop_back();
    ++seen;
    for (uint32_t k = g.succStart[i]; k < g.succStart[i + 1]; ++k)
      if (--indeg[g.succ[k]] == 0)
        work.push_back(g.succ[k]);
  }
  if (seen != g.numNodes)
    for (uint32_t i = 0; i < g.numNodes; ++i)
      if (indeg[i]) {
        errors.add(where(rank, f.nodes[i]) +
                   ": on a dependency cycle (these nodes would never run)");
        break;
      }
}

} // namespace

bool stage::trace::loadTraceSet(const TraceSetOptions &o, TraceSet &set,
                                Errors &errors) {
  SetFiles files;
  if (!findSetFiles(o, files, errors))
    return false;
  int64_t n = files.ranks;
  // Problems that make the files not one whole set, per rank (reported in
  // rank order, alone), and those of the ranks' contents.
  std::vector<std::string> integrity(n);
  std::string groupsProblem;
  Errors checks;
  if (files.groupsExist) {
    if (auto buf = readGroupsFile(o, files, groupsProblem))
      loadGroups(buf->getBuffer(), files.groups, n, set, checks);
  }
  // Without a manifest, the identities the ranks carry (if any) must agree;
  // a rank without metadata has its own error and takes no part.
  std::vector<std::optional<std::string>> identities(files.manifest ? 0 : n);
  set.ranks.resize(n);
  // Ranks of one structure share a ClassGraph: found by hash, confirmed
  // equal, added under the lock when new (a class is never changed once
  // added, so it is compared outside the lock).
  std::mutex classLock;
  std::unordered_map<uint64_t, std::vector<const ClassGraph *>> byHash;
  set.classes.push_back(std::make_unique<ClassGraph>()); // a missing file's
  const ClassGraph *empty = set.classes.front().get();
  auto intern = [&](std::unique_ptr<ClassGraph> g) -> const ClassGraph * {
    uint64_t h = g->structureHash();
    std::vector<const ClassGraph *> seen;
    {
      std::lock_guard<std::mutex> lock(classLock);
      seen = byHash[h];
    }
    for (const ClassGraph *c : seen)
      if (c->sameStructure(*g))
        return c;
    std::lock_guard<std::mutex> lock(classLock);
    std::vector<const ClassGraph *> &now = byHash[h];
    for (size_t k = seen.size(); k < now.size(); ++k)
      if (now[k]->sameStructure(*g))
        return now[k];
    set.classes.push_back(std::move(g));
    now.push_back(set.classes.back().get());
    return now.back();
  };
  parallelFor(n, o.threads, [&](int64_t r) {
    set.ranks[r].graph = empty;
    const std::string &path = files.traces[r];
    if (path.empty())
      return;
    auto buf = readRankFile(o, files, r, integrity[r]);
    if (!buf)
      return;
    TraceFile file;
    for (std::string &e : decodeTrace(path, buf->getBuffer(), file))
      checks.add(std::move(e));
    integrity[r] = checkRankIdentity(file, r, files);
    if (!files.manifest && file.hasMetadata)
      identities[r] =
          std::string(file.traceSet.present ? file.traceSet.text : "");
    auto graph = std::make_unique<ClassGraph>();
    checkRank(file, r, set, n, o, *graph, set.ranks[r], checks);
    set.ranks[r].graph = intern(std::move(graph));
  });
  if (!files.manifest) {
    // The first rank with an identity is the reference.
    auto ref = llvm::find_if(identities,
                             [](const auto &id) { return id && !id->empty(); });
    auto named = [](const std::string &id) {
      return id.empty() ? std::string("(none)") : id;
    };
    if (ref != identities.end())
      for (int64_t r = 0; r < n; ++r)
        if (identities[r] && *identities[r] != **ref && integrity[r].empty())
          integrity[r] =
              "the ranks carry different identities: " + files.traces[r] +
              " (rank " + std::to_string(r) + ") is of trace set " +
              named(*identities[r]) + ", rank " +
              std::to_string(ref - identities.begin()) + "'s of " + **ref;
  }
  bool whole =
      groupsProblem.empty() &&
      llvm::all_of(integrity, [](const std::string &p) { return p.empty(); });
  if (!whole) {
    if (!groupsProblem.empty())
      errors.add(groupsProblem);
    for (std::string &p : integrity)
      if (!p.empty())
        errors.add(std::move(p));
    return false;
  }
  if (!set.hasGroups)
    for (const RankGraph &g : set.ranks)
      if (g.namesGroups) {
        checks.add(g.path +
                   ": collectives name groups but there is no "
                   "groups file " +
                   files.groups);
        break;
      }
  errors.merge(checks);
  return true;
}
