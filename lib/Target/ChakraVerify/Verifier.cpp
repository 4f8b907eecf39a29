//===- Verifier.cpp - Checking a Chakra trace set across ranks ------------===//

#include "Stage/Target/ChakraVerify/Verifier.h"

#include "TraceSet.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>
#include <map>
#include <queue>
#include <unordered_map>

using namespace stage::trace;

namespace {

/// A message as ASTRA-sim matches it: (source, destination, tag, size).
struct MessageKey {
  int64_t src, dst, tag, size;
  bool operator==(const MessageKey &o) const {
    return src == o.src && dst == o.dst && tag == o.tag && size == o.size;
  }
  static MessageKey of(const CommNode &c) { return {c.src, c.dst, c.tag, c.size}; }
};
struct MessageHash {
  size_t operator()(const MessageKey &k) const {
    uint64_t h = uint64_t(k.src) * 0x9E3779B97F4A7C15ull;
    for (int64_t v : {k.dst, k.tag, k.size})
      h = (h ^ uint64_t(v)) * 0xBF58476D1CE4E5B9ull + (h >> 29);
    return size_t(h);
  }
};

std::string describe(const MessageKey &k) {
  return "message from rank " + std::to_string(k.src) + " to " +
         std::to_string(k.dst) + " tag " + std::to_string(k.tag) + " of " +
         std::to_string(k.size) + " bytes";
}

/// Every send has its receive: the multiset of sends equals that of
/// receives. Each side is summed as hashes of its messages per destination
/// rank (two independent 64-bit hashes: the set's messages would not fit in
/// memory at scale); the ranks whose sums differ are then compared message
/// by message for the errors.
void checkPairs(const TraceSet &set, Errors &errors) {
  int64_t n = int64_t(set.ranks.size());
  struct Sums {
    uint64_t a = 0, b = 0;
    bool operator==(const Sums &o) const { return a == o.a && b == o.b; }
  };
  auto add = [](Sums &s, const MessageKey &k, bool plus) {
    uint64_t h1 = MessageHash()(k);
    uint64_t h2 = (h1 ^ 0xD6E8FEB86659FD93ull) * 0x9E3779B97F4A7C15ull;
    h2 ^= h2 >> 32;
    s.a += plus ? h1 : -h1;
    s.b += plus ? h2 : -h2;
  };
  // Per destination: sends to it minus its receives.
  std::vector<Sums> balance(n);
  for (int64_t r = 0; r < n; ++r) {
    const RankGraph &g = set.ranks[r];
    for (size_t j = 0; j < g.numComm(); ++j) {
      CommNode c = g.comm(j, r);
      if ((c.type == SendNode || c.type == RecvNode) && c.dst >= 0 && c.dst < n)
        add(balance[c.dst], MessageKey::of(c), c.type == SendNode);
    }
  }
  const Sums zero;
  size_t reported = 0;
  for (int64_t d = 0; d < n && reported < 20; ++d) {
    if (balance[d] == zero)
      continue;
    ++reported;
    // The messages to rank d, exactly.
    std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>,
             std::pair<int64_t, std::string>>
        byKey;
    for (int64_t r = 0; r < n; ++r) {
      const RankGraph &g = set.ranks[r];
      for (size_t j = 0; j < g.numComm(); ++j) {
        CommNode c = g.comm(j, r);
        if ((c.type != SendNode && c.type != RecvNode) || c.dst != d)
          continue;
        auto &[count, example] = byKey[{c.src, c.dst, c.tag, c.size}];
        count += c.type == SendNode ? 1 : -1;
        if (example.empty())
          example = c.where(r);
      }
    }
    for (const auto &[key, entry] : byKey) {
      auto [src, dst, tag, size] = key;
      MessageKey k{src, dst, tag, size};
      if (entry.first < 0)
        errors.add(entry.second + ": receive without a matching send (" +
                   describe(k) + "): the rank hangs");
      else if (entry.first > 0)
        errors.add(entry.second + ": send without a matching receive (" +
                   describe(k) + ")");
    }
  }
}

/// Every member of a group issues the same sequence of collectives. Each
/// rank's sequence per group is kept as a hash and a length (the set's
/// collectives would not fit in memory at scale); two members whose
/// summaries differ are compared element by element for the message.
void checkSequences(const TraceSet &set, Errors &errors) {
  int64_t n = set.ranks.size();
  struct Issued {
    uint64_t type;
    int64_t size, tag;
    bool operator==(const Issued &o) const {
      return type == o.type && size == o.size && tag == o.tag;
    }
  };
  using Sequence = std::vector<Issued>;
  struct Summary {
    uint64_t hash = 0x9E3779B97F4A7C15ull;
    uint64_t length = 0;
    bool operator==(const Summary &o) const {
      return hash == o.hash && length == o.length;
    }
  };
  auto collectives = [&](int64_t r, auto &&fn) {
    for (size_t k = 0; k < set.ranks[r].numComm(); ++k)
      if (CommNode c = set.ranks[r].comm(k, r);
          c.type == CollNode && c.group >= 0)
        fn(c);
  };
  // group -> rank -> the summary of its collectives in that group.
  std::map<int64_t, std::unordered_map<int64_t, Summary>> summaries;
  for (int64_t r = 0; r < n; ++r) {
    // A comm_tag, where written, is the collective's place in its group's
    // sequence: unique, so that a synchronizer matching on it cannot pair
    // two collectives of one group.
    std::map<std::pair<int64_t, int64_t>, CommNode> tagged;
    collectives(r, [&](const CommNode &c) {
      Summary &s = summaries[c.group][r];
      for (uint64_t v : {c.commType, uint64_t(c.size), uint64_t(c.tag)})
        s.hash = (s.hash ^ v) * 0xBF58476D1CE4E5B9ull + (s.hash >> 31);
      ++s.length;
      if (c.tag < 0)
        return;
      auto [it, fresh] = tagged.try_emplace({c.group, c.tag}, c);
      if (!fresh)
        errors.add(c.where(r) + ": comm_tag " + std::to_string(c.tag) +
                   " repeats that of " + it->second.where(r) +
                   " in the same group");
    });
  }
  auto sequenceOf = [&](int64_t r, int64_t group) {
    Sequence seq;
    collectives(r, [&](const CommNode &c) {
      if (c.group == group)
        seq.push_back({c.commType, c.size, c.tag});
    });
    return seq;
  };
  const Summary none;
  for (auto &[id, byRank] : summaries) {
    std::vector<int64_t> members;
    if (id == 0) {
      for (int64_t r = 0; r < n; ++r)
        members.push_back(r);
    } else if (auto it = set.groups.find(id); it != set.groups.end()) {
      members = it->second;
    } else {
      continue;
    }
    if (members.empty())
      continue; // reported when the groups were read
    auto summaryOf = [&](int64_t m) -> const Summary & {
      auto it = byRank.find(m);
      return it == byRank.end() ? none : it->second;
    };
    const Summary &first = summaryOf(members.front());
    for (int64_t m : members) {
      if (summaryOf(m) == first)
        continue;
      Sequence reference = sequenceOf(members.front(), id),
               seq = sequenceOf(m, id);
      if (seq == reference)
        continue; // a hash collision: the sequences agree
      size_t common = std::min(seq.size(), reference.size()), i = 0;
      while (i < common && seq[i] == reference[i])
        ++i;
      std::string g = id ? "group " + std::to_string(id) : std::string("all ranks");
      if (i < common && seq[i].type == reference[i].type &&
          seq[i].size == reference[i].size)
        errors.add(g + ": collective " + std::to_string(i) + " of rank " +
                   std::to_string(m) + " has comm_tag " +
                   std::to_string(seq[i].tag) + " but rank " +
                   std::to_string(members.front()) + "'s has " +
                   std::to_string(reference[i].tag) +
                   ": a synchronizer matching tags pairs other collectives");
      else if (i < common)
        errors.add(g + ": collective " + std::to_string(i) + " of rank " +
                   std::to_string(m) + " is " + commTypeName(seq[i].type) +
                   " of " + std::to_string(seq[i].size) + " bytes but rank " +
                   std::to_string(members.front()) + " issues " +
                   commTypeName(reference[i].type) + " of " +
                   std::to_string(reference[i].size) +
                   " bytes: the group hangs");
      else
        errors.add(g + ": rank " + std::to_string(m) + " issues " +
                   std::to_string(seq.size()) + " collectives, rank " +
                   std::to_string(members.front()) + " issues " +
                   std::to_string(reference.size()) + ": the group hangs");
      break;
    }
  }
}

/// An abstract run of ASTRA-sim's issue rules with every operation taking no
/// time: a node runs when its dependencies are done; ready communication
/// issues in ascending id order, one collective in flight per rank and
/// group (a group's collectives run in order on their own stream, as NCCL
/// communicators and ASTRA-sim's do; traces that chain all of a rank's
/// collectives never have two ready at once);
/// a receive completes once its send has been issued; a collective
/// completes once every member has issued it (matched by issue order). What
/// is left when nothing can move waits forever. One function: the issue
/// rules share the run's state (ready queues, groups' issue order, peers).
/// `Count` holds a node's dependencies left: 16 bits when every node has
/// fewer than 2^16 (a rank's counts are the run's largest state).
template <typename Count>
void simulateWith(const TraceSet &set, Errors &errors) {
  int64_t n = set.ranks.size();
  struct RankState {
    std::vector<Count> indeg;
    std::vector<uint32_t> readyNow; // compute and receives
    std::priority_queue<std::pair<uint64_t, uint32_t>,
                        std::vector<std::pair<uint64_t, uint32_t>>,
                        std::greater<>>
        readyComm;
    /// Per group, the collective in flight, and the ready ones that wait
    /// for it to complete.
    std::map<int64_t, uint32_t> inFlight;
    std::map<int64_t, std::vector<std::pair<uint64_t, uint32_t>>> held;
    size_t done = 0;
    std::unordered_map<int64_t, int64_t> issued; // group -> collectives issued
  };
  std::vector<RankState> st(n);
  for (int64_t r = 0; r < n; ++r)
    st[r].indeg.assign(set.ranks[r].graph->indeg.begin(),
                       set.ranks[r].graph->indeg.end());
  auto commOf = [&](int64_t r, uint32_t i) {
    return set.ranks[r].commOfNode(i, r);
  };
  std::unordered_map<MessageKey, int64_t, MessageHash> sent;
  // Messages sent and not yet received, receives still waiting: entries go
  // when they are matched, so that these hold what is in flight only.
  std::unordered_map<MessageKey, std::vector<std::pair<int64_t, uint32_t>>,
                     MessageHash>
      waitingRecvs;
  struct SlotHash {
    size_t operator()(const std::pair<int64_t, int64_t> &p) const {
      return size_t(uint64_t(p.first) * 0x9E3779B97F4A7C15ull ^ uint64_t(p.second));
    }
  };
  std::unordered_map<std::pair<int64_t, int64_t>,
                     std::vector<std::pair<int64_t, uint32_t>>, SlotHash>
      arrived;
  std::deque<int64_t> work;
  std::vector<bool> queued(n, false);
  auto wake = [&](int64_t r) {
    if (!queued[r]) {
      queued[r] = true;
      work.push_back(r);
    }
  };
  auto makeReady = [&](int64_t r, uint32_t i) {
    uint8_t type = set.ranks[r].graph->type[i];
    if (type == SendNode || type == CollNode)
      st[r].readyComm.push({commOf(r, i).id, i});
    else
      st[r].readyNow.push_back(i);
    wake(r);
  };
  auto complete = [&](int64_t r, uint32_t i) {
    RankState &s = st[r];
    const ClassGraph &g = *set.ranks[r].graph;
    ++s.done;
    for (uint32_t k = g.succStart[i]; k < g.succStart[i + 1]; ++k)
      if (--s.indeg[g.succ[k]] == 0)
        makeReady(r, g.succ[k]);
  };
  for (int64_t r = 0; r < n; ++r)
    for (uint32_t i = 0; i < st[r].indeg.size(); ++i)
      if (!st[r].indeg[i])
        makeReady(r, i);

  // A rank runs until it blocks (keeping its data in cache), then the next.
  while (!work.empty()) {
    int64_t r = work.front();
    work.pop_front();
    queued[r] = false;
    RankState &s = st[r];
    const ClassGraph &g = *set.ranks[r].graph;
    for (;;) {
      while (!s.readyNow.empty()) {
        uint32_t i = s.readyNow.back();
        s.readyNow.pop_back();
        if (g.type[i] != RecvNode) {
          complete(r, i);
          continue;
        }
        MessageKey k = MessageKey::of(commOf(r, i));
        auto it = sent.find(k);
        if (it != sent.end()) {
          if (--it->second == 0)
            sent.erase(it);
          complete(r, i);
        } else {
          waitingRecvs[k].push_back({r, i});
        }
      }
      if (s.readyComm.empty())
        break;
      auto [order, i] = s.readyComm.top();
      s.readyComm.pop();
      CommNode c = commOf(r, i);
      if (c.type == SendNode) {
        MessageKey k = MessageKey::of(c);
        auto q = waitingRecvs.find(k);
        if (q != waitingRecvs.end()) {
          auto [rr, ri] = q->second.front();
          q->second.erase(q->second.begin());
          if (q->second.empty())
            waitingRecvs.erase(q);
          complete(rr, ri);
        } else {
          ++sent[k];
        }
        complete(r, i);
        continue;
      }
      if (s.inFlight.count(c.group)) {
        s.held[c.group].push_back({order, i});
        continue;
      }
      int64_t seq = s.issued[c.group]++;
      auto &group = arrived[{c.group, seq}];
      group.push_back({r, i});
      size_t members = c.group == 0 ? size_t(n)
                       : set.groups.count(c.group) ? set.groups.at(c.group).size()
                                                   : size_t(1);
      s.inFlight[c.group] = i;
      if (group.size() < members)
        continue;
      for (auto [mr, mi] : group) {
        RankState &m = st[mr];
        m.inFlight.erase(c.group);
        for (const auto &h : m.held[c.group])
          m.readyComm.push(h);
        m.held.erase(c.group);
        complete(mr, mi);
        if (mr != r)
          wake(mr);
      }
      arrived.erase({c.group, seq});
    }
  }
  size_t reported = 0;
  for (int64_t r = 0; r < n && reported < 10; ++r) {
    const RankState &s = st[r];
    const RankGraph &rg = set.ranks[r];
    const ClassGraph &g = *rg.graph;
    if (s.done == g.numNodes)
      continue;
    ++reported;
    std::string why;
    if (!s.inFlight.empty()) {
      // The collective in flight that came first in the file.
      uint32_t first = UINT32_MAX;
      for (const auto &[group, node] : s.inFlight)
        first = std::min(first, node);
      CommNode c = commOf(r, first);
      why = c.where(r) + " waits in its collective (pg_name \"" +
            std::to_string(c.group) + "\") for members that never issue it";
    } else {
      // The first receive of this rank still waiting, in file order.
      for (size_t k = 0; k < rg.numComm(); ++k)
        if (CommNode c = rg.comm(k, r);
            c.type == RecvNode && s.indeg[c.index] == 0 && why.empty()) {
          auto q = waitingRecvs.find(MessageKey::of(c));
          if (q != waitingRecvs.end() &&
              llvm::is_contained(q->second, std::make_pair(r, c.index)))
            why = c.where(r) + " waits for a message from rank " +
                  std::to_string(c.src) + " (tag " + std::to_string(c.tag) +
                  ") that is never sent";
        }
      if (why.empty())
        why = "rank " + std::to_string(r) + " stops with " +
              std::to_string(g.numNodes - s.done) +
              " nodes waiting on each other";
    }
    errors.add("deadlock: " + why);
  }
}

void simulate(const TraceSet &set, Errors &errors) {
  uint32_t most = 0;
  for (const std::unique_ptr<ClassGraph> &c : set.classes)
    for (uint32_t d : c->indeg)
      most = std::max(most, d);
  if (most < (1u << 16))
    simulateWith<uint16_t>(set, errors);
  else
    simulateWith<uint32_t>(set, errors);
}

} // namespace

VerifyResult stage::trace::verifyTraceSet(const TraceSetOptions &o) {
  VerifyResult result;
  Errors errors;
  TraceSet set;
  if (!loadTraceSet(o, set, errors)) {
    result.errors = errors.take(result.truncated);
    return result;
  }
  result.ranks = set.ranks.size();
  for (const RankGraph &g : set.ranks)
    result.nodes += g.graph->numNodes;
  checkPairs(set, errors);
  checkSequences(set, errors);
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
  bool loaded = loadTraceSet(o, set, errors);
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
      for (auto [r, g] : llvm::enumerate(set.ranks))
        j.object([&] {
          const RankStats &s = g.stats;
          j.attribute("rank", int64_t(r));
          j.attributeObject("nodes", [&] {
            for (auto &[k, v] : s.nodes)
              j.attribute(k, v);
          });
          j.attribute("flops", int64_t(s.flops));
          j.attribute("tensor_bytes", int64_t(s.tensorBytes));
          j.attributeObject("collective_bytes", [&] {
            for (auto &[k, v] : s.collectiveBytes)
              j.attribute(k, int64_t(v));
          });
          j.attribute("send_bytes", int64_t(s.sendBytes));
          j.attribute("recv_bytes", int64_t(s.recvBytes));
        });
    });
  });
  os << "\n";
  return out;
}
