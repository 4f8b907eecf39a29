//===- Verifier.cpp - Checking a Chakra trace set -------------------------===//

#include "Verifier.h"

#include "TraceReader.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <queue>
#include <set>
#include <thread>
#include <unordered_map>

using namespace stage::trace;

namespace {

enum : uint64_t {
  InvalidNode = 0, MetadataNode = 1, MemLoad = 2, MemStore = 3, CompNode = 4,
  SendNode = 5, RecvNode = 6, CollNode = 7
};
enum : unsigned {
  Int32Val = 7, Int64Val = 9, Uint64Val = 13, BoolVal = 27, StringVal = 29
};
const char *memberName(unsigned m) {
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
const char *commTypeName(uint64_t t) {
  static const char *const names[] = {
      "ALL_REDUCE", "REDUCE", "ALL_GATHER", "GATHER", "SCATTER",
      "BROADCAST", "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK",
      "BARRIER"};
  return t < 10 ? names[t] : "an unknown type";
}

/// Collects errors from several threads, keeping the first few hundred.
class Errors {
public:
  void add(std::string e) {
    std::lock_guard<std::mutex> lock(m);
    if (list.size() < kMax)
      list.push_back(std::move(e));
    else
      truncated = true;
  }
  std::vector<std::string> take(bool &t) {
    t = truncated;
    return std::move(list);
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(m);
    return list.size();
  }

private:
  static constexpr size_t kMax = 200;
  std::mutex m;
  std::vector<std::string> list;
  bool truncated = false;
};

struct TraceSet {
  std::vector<TraceFile> ranks;
  std::map<int64_t, std::vector<int64_t>> groups;
  bool hasGroups = false;
};

void parallelFor(int64_t n, unsigned threads,
                 const std::function<void(int64_t)> &body) {
  if (!threads)
    threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::max<unsigned>(1, std::min<int64_t>(threads, n));
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int64_t i = next++; i < n; i = next++)
        body(i);
    });
  for (auto &t : pool)
    t.join();
}

/// Reads `<prefix>.<r>.et` for every rank and the groups file.
bool load(const TraceSetOptions &o, TraceSet &set, Errors &errors) {
  std::error_code ec;
  std::set<int64_t> found;
  std::string head = o.prefix + ".";
  for (llvm::sys::fs::directory_iterator it(o.dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    int64_t r;
    if (name.consume_front(head) && name.consume_back(".et") &&
        !name.getAsInteger(10, r) && r >= 0)
      found.insert(r);
  }
  if (ec) {
    errors.add("cannot read the directory " + o.dir + ": " + ec.message());
    return false;
  }
  if (found.empty()) {
    errors.add("no trace files " + o.prefix + ".<rank>.et in " + o.dir);
    return false;
  }
  int64_t n = *found.rbegin() + 1;
  for (int64_t r = 0; r < n; ++r)
    if (!found.count(r))
      errors.add("rank " + std::to_string(r) + " has no file " + o.prefix +
                 "." + std::to_string(r) + ".et: every rank 0.." +
                 std::to_string(n - 1) + " needs one");
  set.ranks.resize(n);
  parallelFor(n, o.threads, [&](int64_t r) {
    std::string path = o.dir + "/" + o.prefix + "." + std::to_string(r) + ".et";
    if (!found.count(r))
      return;
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf) {
      errors.add("cannot read " + path + ": " + buf.getError().message());
      return;
    }
    for (std::string &e :
         decodeTrace(path, std::string((*buf)->getBuffer()), set.ranks[r]))
      errors.add(std::move(e));
  });

  std::string groups = o.groups.empty() ? o.dir + "/" + o.prefix + ".json" : o.groups;
  if (!llvm::sys::fs::exists(groups)) {
    if (!o.groups.empty())
      errors.add("the groups file " + groups + " does not exist");
    return true;
  }
  auto buf = llvm::MemoryBuffer::getFile(groups);
  if (!buf) {
    errors.add("cannot read " + groups + ": " + buf.getError().message());
    return true;
  }
  llvm::Expected<llvm::json::Value> json = llvm::json::parse((*buf)->getBuffer());
  if (!json) {
    errors.add(groups + ": malformed JSON: " + llvm::toString(json.takeError()));
    return true;
  }
  const llvm::json::Object *obj = json->getAsObject();
  if (!obj) {
    errors.add(groups + ": the groups file must be one JSON object");
    return true;
  }
  set.hasGroups = true;
  for (const auto &[key, value] : *obj) {
    int64_t id;
    llvm::StringRef k = key;
    if (k.getAsInteger(10, id) || id <= 0 || std::to_string(id) != k.str()) {
      errors.add(groups + ": group key \"" + k.str() +
                 "\" is not a positive decimal integer (\"0\" aborts ASTRA-sim)");
      continue;
    }
    const llvm::json::Array *members = value.getAsArray();
    if (!members) {
      errors.add(groups + ": group " + k.str() + " is not a list of ranks");
      continue;
    }
    std::vector<int64_t> list;
    std::set<int64_t> seen;
    for (const llvm::json::Value &m : *members) {
      std::optional<int64_t> r = m.getAsInteger();
      if (!r || *r < 0 || *r >= n) {
        errors.add(groups + ": group " + k.str() + " lists " +
                   (r ? std::to_string(*r) : std::string("a non-integer")) +
                   ", not a rank of 0.." + std::to_string(n - 1));
        continue;
      }
      if (!seen.insert(*r).second)
        errors.add(groups + ": group " + k.str() + " lists rank " +
                   std::to_string(*r) + " twice");
      list.push_back(*r);
    }
    set.groups[id] = std::move(list);
  }
  return true;
}

std::string where(const TraceFile &f, int64_t rank, const Node &n) {
  return "rank " + std::to_string(rank) + " node " + std::to_string(n.id) +
         (n.name.empty() ? "" : " '" + n.name + "'");
}

/// Checks one rank's file on its own.
void checkRank(const TraceSet &set, int64_t rank, Errors &errors) {
  const TraceFile &f = set.ranks[rank];
  int64_t n = set.ranks.size();
  std::unordered_map<uint64_t, size_t> byId;
  for (size_t i = 0; i < f.nodes.size(); ++i)
    if (!byId.emplace(f.nodes[i].id, i).second)
      errors.add(where(f, rank, f.nodes[i]) +
                 ": duplicate node id (only the last one would survive)");
  auto need = [&](const Node &node, const Attr &a, const char *name,
                  unsigned member) {
    if (!a.present) {
      errors.add(where(f, rank, node) + ": missing attribute " + name);
      return false;
    }
    if (a.member != member) {
      errors.add(where(f, rank, node) + ": " + name + " is a " +
                 memberName(a.member) + ", readers expect " + memberName(member) +
                 " (older readers silently read 0)");
      return false;
    }
    return true;
  };
  for (const Node &node : f.nodes) {
    for (uint64_t d : node.deps)
      if (!byId.count(d))
        errors.add(where(f, rank, node) + ": depends on node " +
                   std::to_string(d) + ", which does not exist");
    if (node.type == InvalidNode || node.type > CollNode) {
      errors.add(where(f, rank, node) + ": node type " +
                 std::to_string(node.type) +
                 (node.type == InvalidNode ? " (INVALID_NODE: the rank never finishes)"
                                           : " is not a Chakra node type"));
      continue;
    }
    if (node.type == MetadataNode) {
      errors.add(where(f, rank, node) + ": METADATA_NODE aborts ASTRA-sim");
      continue;
    }
    if (need(node, node.isCpuOp, "is_cpu_op", BoolVal) && node.isCpuOp.raw &&
        node.type >= SendNode)
      errors.add(where(f, rank, node) + ": a communication node must have "
                                        "is_cpu_op false");
    switch (node.type) {
    case CompNode:
      need(node, node.numOps, "num_ops", Int64Val);
      if (need(node, node.tensorSize, "tensor_size", Uint64Val) &&
          node.tensorSize.raw == 0)
        errors.add(where(f, rank, node) +
                   ": tensor_size is 0 (the roofline divides by it: the rank stalls)");
      break;
    case CollNode: {
      if (need(node, node.commType, "comm_type", Int64Val)) {
        uint64_t t = node.commType.raw;
        bool simulated = t == 0 || t == 2 || t == 6 || t == 7;
        bool waits = t == 5 && node.durationMicros;
        if (!simulated && !waits)
          errors.add(where(f, rank, node) + ": comm_type " + commTypeName(t) +
                     " aborts ASTRA-sim (it simulates ALL_REDUCE, ALL_GATHER, "
                     "ALL_TO_ALL and REDUCE_SCATTER)");
      }
      if (need(node, node.commSize, "comm_size", Int64Val) &&
          int64_t(node.commSize.raw) <= 0)
        errors.add(where(f, rank, node) + ": comm_size must be positive");
      if (node.pgName.present) {
        if (node.pgName.member != StringVal) {
          errors.add(where(f, rank, node) + ": pg_name is a " +
                     memberName(node.pgName.member) + ", readers expect string_val");
        } else if (!node.pgName.text.empty()) {
          int64_t id;
          if (llvm::StringRef(node.pgName.text).getAsInteger(10, id) ||
              !set.groups.count(id)) {
            errors.add(where(f, rank, node) + ": pg_name \"" + node.pgName.text +
                       "\" names no group of the groups file");
          } else {
            const auto &members = set.groups.at(id);
            if (std::find(members.begin(), members.end(), rank) == members.end())
              errors.add(where(f, rank, node) + ": rank " +
                         std::to_string(rank) + " is not a member of group " +
                         node.pgName.text);
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
      if (!ok)
        break;
      int64_t src = asInt32(node.commSrc.raw), dst = asInt32(node.commDst.raw);
      int64_t tag = asInt32(node.commTag.raw);
      if ((send ? src : dst) != rank)
        errors.add(where(f, rank, node) + ": a " + (send ? "send" : "receive") +
                   " on rank " + std::to_string(rank) + " has comm_" +
                   (send ? "src " : "dst ") + std::to_string(send ? src : dst));
      int64_t peer = send ? dst : src;
      if (peer == rank)
        errors.add(where(f, rank, node) + ": sends to itself (aborts ASTRA-sim)");
      else if (peer < 0 || peer >= n)
        errors.add(where(f, rank, node) + ": peer rank " + std::to_string(peer) +
                   " does not exist (" + std::to_string(n) + " ranks)");
      if (tag < 0)
        errors.add(where(f, rank, node) + ": comm_tag " + std::to_string(tag) +
                   " is not in [0, 2^31)");
      if (int64_t(node.commSize.raw) <= 0)
        errors.add(where(f, rank, node) + ": comm_size must be positive");
      break;
    }
    default:
      break;
    }
  }
  // Cycles: the nodes of a cycle never run (ASTRA-sim skips them silently).
  std::vector<uint32_t> indeg(f.nodes.size(), 0);
  std::vector<std::vector<uint32_t>> succ(f.nodes.size());
  for (size_t i = 0; i < f.nodes.size(); ++i)
    for (uint64_t d : f.nodes[i].deps)
      if (auto it = byId.find(d); it != byId.end()) {
        succ[it->second].push_back(uint32_t(i));
        ++indeg[i];
      }
  std::vector<uint32_t> work;
  for (size_t i = 0; i < indeg.size(); ++i)
    if (!indeg[i])
      work.push_back(uint32_t(i));
  size_t seen = 0;
  while (!work.empty()) {
    uint32_t i = work.back();
    work.pop_back();
    ++seen;
    for (uint32_t s : succ[i])
      if (--indeg[s] == 0)
        work.push_back(s);
  }
  if (seen != f.nodes.size())
    for (size_t i = 0; i < indeg.size(); ++i)
      if (indeg[i]) {
        errors.add(where(f, rank, f.nodes[i]) +
                   ": on a dependency cycle (these nodes would never run)");
        break;
      }
}

using MessageKey = std::tuple<int64_t, int64_t, int64_t, int64_t>;

/// Every send has its receive and every group issues one sequence.
void checkPairs(const TraceSet &set, Errors &errors) {
  std::map<MessageKey, int64_t> balance;
  std::map<MessageKey, std::string> example;
  int64_t n = set.ranks.size();
  for (int64_t r = 0; r < n; ++r)
    for (const Node &node : set.ranks[r].nodes) {
      if (node.type != SendNode && node.type != RecvNode)
        continue;
      MessageKey k{asInt32(node.commSrc.raw), asInt32(node.commDst.raw),
                   asInt32(node.commTag.raw), int64_t(node.commSize.raw)};
      balance[k] += node.type == SendNode ? 1 : -1;
      example.emplace(k, where(set.ranks[r], r, node));
    }
  for (auto &[k, b] : balance) {
    auto [src, dst, tag, size] = k;
    std::string msg = "message from rank " + std::to_string(src) + " to " +
                      std::to_string(dst) + " tag " + std::to_string(tag) +
                      " of " + std::to_string(size) + " bytes";
    if (b < 0)
      errors.add(example[k] + ": receive without a matching send (" + msg +
                 "): the rank hangs");
    else if (b > 0)
      errors.add(example[k] + ": send without a matching receive (" + msg + ")");
  }
  // Collectives, in each member's order.
  std::map<int64_t, std::map<int64_t, std::vector<std::pair<uint64_t, uint64_t>>>>
      sequences;
  for (int64_t r = 0; r < n; ++r)
    for (const Node &node : set.ranks[r].nodes) {
      if (node.type != CollNode)
        continue;
      int64_t id = 0;
      if (!node.pgName.text.empty())
        llvm::StringRef(node.pgName.text).getAsInteger(10, id);
      sequences[id][r].push_back({node.commType.raw, node.commSize.raw});
    }
  for (auto &[id, byRank] : sequences) {
    std::vector<int64_t> members;
    if (id == 0) {
      for (int64_t r = 0; r < n; ++r)
        members.push_back(r);
    } else if (auto it = set.groups.find(id); it != set.groups.end()) {
      members = it->second;
    } else {
      continue;
    }
    const auto *reference = &byRank[members.front()];
    for (int64_t m : members) {
      const auto &seq = byRank[m];
      size_t common = std::min(seq.size(), reference->size());
      size_t i = 0;
      while (i < common && seq[i] == (*reference)[i])
        ++i;
      if (i == common && seq.size() == reference->size())
        continue;
      std::string g = id ? "group " + std::to_string(id) : std::string("all ranks");
      if (i < common)
        errors.add(g + ": collective " + std::to_string(i) + " of rank " +
                   std::to_string(m) + " is " + commTypeName(seq[i].first) + " of " +
                   std::to_string(seq[i].second) + " bytes but rank " +
                   std::to_string(members.front()) + " issues " +
                   commTypeName((*reference)[i].first) + " of " +
                   std::to_string((*reference)[i].second) +
                   " bytes: the group hangs");
      else
        errors.add(g + ": rank " + std::to_string(m) + " issues " +
                   std::to_string(seq.size()) + " collectives, rank " +
                   std::to_string(members.front()) + " issues " +
                   std::to_string(reference->size()) + ": the group hangs");
      break;
    }
  }
}

/// An abstract run of ASTRA-sim's issue rules with every operation taking no
/// time: a node runs when its dependencies are done; ready communication
/// issues in ascending id order, one collective or send in flight per rank;
/// a receive completes once its send has been issued; a collective
/// completes once every member has issued it (matched by issue order). What
/// is left when nothing can move waits forever.
void simulate(const TraceSet &set, Errors &errors) {
  int64_t n = set.ranks.size();
  struct RankState {
    std::vector<uint32_t> indeg;
    std::vector<std::vector<uint32_t>> succ;
    std::vector<uint32_t> readyNow; // compute and receives
    std::priority_queue<std::pair<uint64_t, uint32_t>,
                        std::vector<std::pair<uint64_t, uint32_t>>,
                        std::greater<>>
        readyComm;
    int64_t inFlight = -1;
    size_t done = 0;
    std::map<int64_t, int64_t> issued; // group -> collectives issued
  };
  std::vector<RankState> st(n);
  for (int64_t r = 0; r < n; ++r) {
    const TraceFile &f = set.ranks[r];
    RankState &s = st[r];
    std::unordered_map<uint64_t, uint32_t> byId;
    for (uint32_t i = 0; i < f.nodes.size(); ++i)
      byId[f.nodes[i].id] = i;
    s.indeg.assign(f.nodes.size(), 0);
    s.succ.resize(f.nodes.size());
    for (uint32_t i = 0; i < f.nodes.size(); ++i)
      for (uint64_t d : f.nodes[i].deps)
        if (auto it = byId.find(d); it != byId.end()) {
          s.succ[it->second].push_back(i);
          ++s.indeg[i];
        }
  }
  auto groupOf = [&](const Node &node) -> int64_t {
    int64_t id = 0;
    if (!node.pgName.text.empty())
      llvm::StringRef(node.pgName.text).getAsInteger(10, id);
    return id;
  };
  std::map<MessageKey, int64_t> sent;
  std::map<MessageKey, std::deque<std::pair<int64_t, uint32_t>>> waitingRecvs;
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, uint32_t>>>
      arrived;
  std::deque<int64_t> work;
  std::vector<bool> queued(n, false);
  auto wake = [&](int64_t r) {
    if (!queued[r]) {
      queued[r] = true;
      work.push_back(r);
    }
  };
  std::function<void(int64_t, uint32_t)> complete;
  auto makeReady = [&](int64_t r, uint32_t i) {
    uint64_t type = set.ranks[r].nodes[i].type;
    if (type == SendNode || type == CollNode)
      st[r].readyComm.push({set.ranks[r].nodes[i].id, i});
    else
      st[r].readyNow.push_back(i);
    wake(r);
  };
  complete = [&](int64_t r, uint32_t i) {
    RankState &s = st[r];
    ++s.done;
    for (uint32_t j : s.succ[i])
      if (--s.indeg[j] == 0)
        makeReady(r, j);
  };
  for (int64_t r = 0; r < n; ++r)
    for (uint32_t i = 0; i < st[r].indeg.size(); ++i)
      if (!st[r].indeg[i])
        makeReady(r, i);

  while (!work.empty()) {
    int64_t r = work.front();
    work.pop_front();
    queued[r] = false;
    RankState &s = st[r];
    const TraceFile &f = set.ranks[r];
    while (!s.readyNow.empty()) {
      uint32_t i = s.readyNow.back();
      s.readyNow.pop_back();
      const Node &node = f.nodes[i];
      if (node.type != RecvNode) {
        complete(r, i);
        continue;
      }
      MessageKey k{asInt32(node.commSrc.raw), asInt32(node.commDst.raw),
                   asInt32(node.commTag.raw), int64_t(node.commSize.raw)};
      if (sent[k] > 0) {
        --sent[k];
        complete(r, i);
      } else {
        waitingRecvs[k].push_back({r, i});
      }
    }
    if (s.inFlight >= 0 || s.readyComm.empty())
      continue;
    uint32_t i = s.readyComm.top().second;
    s.readyComm.pop();
    const Node &node = f.nodes[i];
    if (node.type == SendNode) {
      MessageKey k{asInt32(node.commSrc.raw), asInt32(node.commDst.raw),
                   asInt32(node.commTag.raw), int64_t(node.commSize.raw)};
      auto &q = waitingRecvs[k];
      if (!q.empty()) {
        auto [rr, ri] = q.front();
        q.pop_front();
        complete(rr, ri);
      } else {
        ++sent[k];
      }
      complete(r, i);
      wake(r);
      continue;
    }
    int64_t g = groupOf(node);
    int64_t seq = s.issued[g]++;
    auto &group = arrived[{g, seq}];
    group.push_back({r, i});
    size_t members = g == 0 ? size_t(n)
                     : set.groups.count(g) ? set.groups.at(g).size()
                                           : size_t(1);
    s.inFlight = i;
    if (group.size() == members) {
      for (auto [mr, mi] : group) {
        st[mr].inFlight = -1;
        complete(mr, mi);
        wake(mr);
      }
      arrived.erase({g, seq});
    }
  }
  size_t reported = 0;
  for (int64_t r = 0; r < n && reported < 10; ++r) {
    const RankState &s = st[r];
    if (s.done == set.ranks[r].nodes.size())
      continue;
    ++reported;
    const TraceFile &f = set.ranks[r];
    std::string why;
    if (s.inFlight >= 0) {
      const Node &node = f.nodes[s.inFlight];
      why = where(f, r, node) + " waits in its collective (pg_name \"" +
            node.pgName.text + "\") for members that never issue it";
    } else {
      for (const auto &[k, q] : waitingRecvs)
        for (auto [rr, ri] : q)
          if (rr == r && why.empty())
            why = where(f, r, f.nodes[ri]) + " waits for a message from rank " +
                  std::to_string(std::get<0>(k)) + " (tag " +
                  std::to_string(std::get<2>(k)) + ") that is never sent";
      if (why.empty())
        why = "rank " + std::to_string(r) + " stops with " +
              std::to_string(f.nodes.size() - s.done) +
              " nodes waiting on each other";
    }
    errors.add("deadlock: " + why);
  }
}

} // namespace

VerifyResult stage::trace::verifyTraceSet(const TraceSetOptions &o) {
  VerifyResult result;
  Errors errors;
  TraceSet set;
  if (!load(o, set, errors)) {
    result.errors = errors.take(result.truncated);
    return result;
  }
  result.ranks = set.ranks.size();
  for (const TraceFile &f : set.ranks)
    result.nodes += f.nodes.size();
  parallelFor(result.ranks, o.threads,
              [&](int64_t r) { checkRank(set, r, errors); });
  if (!set.hasGroups)
    for (const TraceFile &f : set.ranks)
      for (const Node &node : f.nodes)
        if (node.type == CollNode && !node.pgName.text.empty()) {
          errors.add(f.path + ": collectives name groups but there is no "
                              "groups file " + o.prefix + ".json");
          goto checked;
        }
checked:
  checkPairs(set, errors);
  // An abstract run is meaningful only on structurally sound traces.
  if (errors.size() == 0)
    simulate(set, errors);
  result.errors = errors.take(result.truncated);
  return result;
}

std::string stage::trace::traceSetStats(const TraceSetOptions &o,
                                        std::string &error) {
  Errors errors;
  TraceSet set;
  bool loaded = load(o, set, errors);
  bool truncated;
  std::vector<std::string> list = errors.take(truncated);
  if (!loaded || !list.empty()) {
    error = list.empty() ? "cannot read the trace set" : list.front();
    return "";
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attribute("ranks", int64_t(set.ranks.size()));
    j.attributeArray("traces", [&] {
      for (auto [r, f] : llvm::enumerate(set.ranks))
        j.object([&] {
          std::map<std::string, int64_t> nodes;
          std::map<std::string, uint64_t> commBytes;
          uint64_t flops = 0, bytes = 0, sendBytes = 0, recvBytes = 0;
          for (const Node &node : f.nodes) {
            static const char *const types[] = {
                "invalid", "metadata", "mem_load", "mem_store",
                "compute", "send",     "recv",     "collective"};
            nodes[node.type < 8 ? types[node.type] : "unknown"]++;
            if (node.type == CompNode) {
              flops += node.numOps.raw;
              bytes += node.tensorSize.raw;
            } else if (node.type == CollNode) {
              commBytes[commTypeName(node.commType.raw)] += node.commSize.raw;
            } else if (node.type == SendNode) {
              sendBytes += node.commSize.raw;
            } else if (node.type == RecvNode) {
              recvBytes += node.commSize.raw;
            }
          }
          j.attribute("rank", int64_t(r));
          j.attributeObject("nodes", [&] {
            for (auto &[k, v] : nodes)
              j.attribute(k, v);
          });
          j.attribute("flops", int64_t(flops));
          j.attribute("tensor_bytes", int64_t(bytes));
          j.attributeObject("collective_bytes", [&] {
            for (auto &[k, v] : commBytes)
              j.attribute(k, int64_t(v));
          });
          j.attribute("send_bytes", int64_t(sendBytes));
          j.attribute("recv_bytes", int64_t(recvBytes));
        });
    });
  });
  os << "\n";
  return out;
}
