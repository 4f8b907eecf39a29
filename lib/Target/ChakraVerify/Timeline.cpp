//===- Timeline.cpp - A trace set replayed in time ------------------------===//
//
// A discrete-event replay of every rank under the issue rules of the
// verifier's abstract run (Verifier.cpp), now with times: a rank runs one
// compute node at a time, ready nodes in file order; a group's collectives
// run one at a time on their own stream, sends on one more, and a
// collective starts when its last member issues it; a receive ends when
// its message has arrived. Compute takes the seconds the set was loaded
// with (duration_micros, else the time model's kernel time); a collective
// its ring algorithm's bytes (all-reduce 2 (n-1)/n of its size,
// reduce-scatter and all-to-all (n-1)/n, all-gather (n-1) times its input)
// priced by the time model's collective time, which knows from the
// group's members how it sits on the nodes: the report's model
// (Stage/Support/TimeModel.h).
//
//===----------------------------------------------------------------------===//

#include "Stage/Target/ChakraVerify/Timeline.h"

#include "Stage/Support/TimeModel.h"

#include "SetFiles.h"
#include "TraceReader.h"
#include "TraceSet.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

using namespace stage::trace;

namespace {

struct Span {
  uint32_t node;
  double start, end;
  uint32_t lane; // 0: compute; 1, 2, ...: communication
};

/// A message as it is matched: (source, destination, tag, size).
using Message = std::tuple<int64_t, int64_t, int64_t, int64_t>;

class Replay {
public:
  Replay(const TraceSet &set, const TimelineOptions &t,
         const std::set<int64_t> &shown)
      : set(set), t(t), shown(shown), st(set.ranks.size()) {}

  /// Runs the set; false if some rank does not finish.
  bool run();
  /// The spans of rank `r` (one of `shown`).
  const std::vector<Span> &spans(int64_t r) { return st[r].spans; }
  double end() const { return makespan; }

private:
  /// A stream of communication: a group's collectives (its id), sends (-1).
  using Stream = int64_t;
  struct RankState {
    std::vector<uint32_t> indeg;
    std::vector<double> readyAt;
    std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>>
        compute;
    std::map<Stream, std::priority_queue<uint32_t, std::vector<uint32_t>,
                                         std::greater<>>>
        comm;
    bool computeBusy = false;
    std::set<Stream> busy;
    std::unordered_map<int64_t, int64_t> issued; // group -> collectives
    size_t done = 0;
    std::vector<Span> spans;
    std::vector<double> laneFree; // communication lanes' ends
  };
  struct Event {
    double time;
    uint64_t seq;
    int64_t rank;
    uint32_t node;
    bool operator>(const Event &o) const {
      return std::tie(time, seq) > std::tie(o.time, o.seq);
    }
  };
  struct MessageHash {
    size_t operator()(const Message &m) const {
      auto [a, b, c, d] = m;
      uint64_t h = uint64_t(a) * 0x9E3779B97F4A7C15ull;
      for (int64_t v : {b, c, d})
        h = (h ^ uint64_t(v)) * 0xBF58476D1CE4E5B9ull + (h >> 29);
      return size_t(h);
    }
  };

  CommNode commOf(int64_t r, uint32_t i) const {
    return set.ranks[r].commOfNode(i, r);
  }
  int64_t groupSize(int64_t group) const {
    if (group == 0)
      return int64_t(set.ranks.size());
    auto it = set.groups.find(group);
    return it == set.groups.end() ? 1 : int64_t(it->second.size());
  }
  /// How the group sits on nodes: all its members in the first's node, or
  /// so many per node.
  ::stage::GroupSpan spanOf(int64_t group) const {
    int64_t perNode = std::max<int64_t>(t.device.gpusPerNode, 1);
    if (group == 0) {
      double n = double(set.ranks.size());
      return {n, std::min<double>(n, double(perNode))};
    }
    auto it = set.groups.find(group);
    if (it == set.groups.end())
      return {1, 1};
    const std::vector<int64_t> &members = it->second;
    int64_t node = members.front() / perNode, same = 0;
    for (int64_t m : members)
      same += m / perNode == node;
    return {double(members.size()), double(same)};
  }
  double commSeconds(const CommNode &c) const {
    using ::stage::CollectiveKind;
    if (c.type != CollNode) {
      // A message: the link inside a node, the network across.
      int64_t perNode = std::max<int64_t>(t.device.gpusPerNode, 1);
      bool across = c.src / perNode != c.dst / perNode;
      return ::stage::collectiveSeconds(CollectiveKind::Send, double(c.size),
                                        {2, across ? 1.0 : 2.0}, 1, t.device);
    }
    ::stage::GroupSpan span = spanOf(c.group);
    double n = span.size, size = double(c.size), sent;
    CollectiveKind kind;
    switch (c.commType) {
    case 0: // the buffer
      kind = CollectiveKind::AllReduce;
      sent = 2 * (n - 1) / n * size;
      break;
    case 2: // each member's part
      kind = CollectiveKind::AllGather;
      sent = (n - 1) * size;
      break;
    case 6: // the send buffer
      kind = CollectiveKind::AllToAll;
      sent = (n - 1) / n * size;
      break;
    default: // reduce-scatter: the whole input
      kind = CollectiveKind::ReduceScatter;
      sent = (n - 1) / n * size;
      break;
    }
    return ::stage::collectiveSeconds(kind, sent, span, 1, t.device);
  }
  void schedule(int64_t r, uint32_t i, double end) {
    events.push({end, seq++, r, i});
  }
  void record(int64_t r, uint32_t i, double start, double end, bool compute) {
    if (!shown.count(r))
      return;
    RankState &s = st[r];
    uint32_t lane = 0;
    if (!compute) {
      size_t k = 0;
      while (k < s.laneFree.size() && s.laneFree[k] > start + 1e-15)
        ++k;
      if (k == s.laneFree.size())
        s.laneFree.push_back(0);
      s.laneFree[k] = end;
      lane = uint32_t(k + 1);
    }
    s.spans.push_back({i, start, end, lane});
  }
  void ready(int64_t r, uint32_t i, double now);
  void dispatch(int64_t r, double now);
  void issueCollective(int64_t r, uint32_t i, double now);

  const TraceSet &set;
  const TimelineOptions &t;
  const std::set<int64_t> &shown;
  std::vector<RankState> st;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  uint64_t seq = 0;
  double makespan = 0;
  /// Per (group, sequence number): the members that issued it, and when.
  struct Issue {
    int64_t rank;
    uint32_t node;
    double at;
  };
  std::map<std::pair<int64_t, int64_t>, std::vector<Issue>> arrived;
  std::unordered_map<Message, std::vector<double>, MessageHash> inTransit;
  std::unordered_map<Message, std::vector<std::pair<int64_t, uint32_t>>,
                     MessageHash>
      waiting;
};

void Replay::ready(int64_t r, uint32_t i, double now) {
  RankState &s = st[r];
  s.readyAt[i] = now;
  uint8_t type = set.ranks[r].graph->type[i];
  if (type == RecvNode) {
    CommNode c = commOf(r, i);
    Message m{c.src, c.dst, c.tag, c.size};
    auto it = inTransit.find(m);
    if (it != inTransit.end() && !it->second.empty()) {
      double arrival = it->second.front();
      it->second.erase(it->second.begin());
      double end = std::max(now, arrival);
      record(r, i, now, end, false);
      schedule(r, i, end);
    } else {
      waiting[m].push_back({r, i});
    }
    return;
  }
  if (type == SendNode)
    s.comm[-1].push(i);
  else if (type == CollNode)
    s.comm[commOf(r, i).group].push(i);
  else
    s.compute.push(i);
}

void Replay::issueCollective(int64_t r, uint32_t i, double now) {
  CommNode c = commOf(r, i);
  RankState &s = st[r];
  int64_t k = s.issued[c.group]++;
  auto &members = arrived[{c.group, k}];
  members.push_back({r, i, now});
  if (int64_t(members.size()) < groupSize(c.group))
    return;
  // The last member has issued it: it runs now on every member, each of
  // which has held it in flight since it issued it.
  double end = now + commSeconds(c);
  for (const Issue &m : members) {
    record(m.rank, m.node, m.at, end, false);
    schedule(m.rank, m.node, end);
  }
  arrived.erase({c.group, k});
}

void Replay::dispatch(int64_t r, double now) {
  RankState &s = st[r];
  const ClassGraph &g = *set.ranks[r].graph;
  if (!s.computeBusy && !s.compute.empty()) {
    uint32_t i = s.compute.top();
    s.compute.pop();
    double end = now + (g.seconds.empty() ? 0 : double(g.seconds[i]));
    s.computeBusy = true;
    record(r, i, now, end, true);
    schedule(r, i, end);
  }
  for (auto &[stream, queue] : s.comm) {
    if (queue.empty() || s.busy.count(stream))
      continue;
    uint32_t i = queue.top();
    queue.pop();
    s.busy.insert(stream);
    CommNode c = commOf(r, i);
    if (c.type == CollNode) {
      issueCollective(r, i, now);
      continue;
    }
    double end = now + commSeconds(c);
    record(r, i, now, end, false);
    schedule(r, i, end);
    Message m{c.src, c.dst, c.tag, c.size};
    auto w = waiting.find(m);
    if (w != waiting.end() && !w->second.empty()) {
      auto [rr, ri] = w->second.front();
      w->second.erase(w->second.begin());
      record(rr, ri, st[rr].readyAt[ri], end, false);
      schedule(rr, ri, end);
    } else {
      inTransit[m].push_back(end);
    }
  }
}

bool Replay::run() {
  int64_t n = int64_t(set.ranks.size());
  for (int64_t r = 0; r < n; ++r) {
    st[r].indeg = set.ranks[r].graph->indeg;
    st[r].readyAt.assign(set.ranks[r].graph->numNodes, 0);
  }
  for (int64_t r = 0; r < n; ++r) {
    for (uint32_t i = 0; i < set.ranks[r].graph->numNodes; ++i)
      if (!st[r].indeg[i])
        ready(r, i, 0);
    dispatch(r, 0);
  }
  while (!events.empty()) {
    Event e = events.top();
    events.pop();
    RankState &s = st[e.rank];
    const ClassGraph &g = *set.ranks[e.rank].graph;
    makespan = std::max(makespan, e.time);
    uint8_t type = g.type[e.node];
    if (type == CompNode || type == MemLoad || type == MemStore)
      s.computeBusy = false;
    else if (type == SendNode)
      s.busy.erase(-1);
    else if (type == CollNode)
      s.busy.erase(commOf(e.rank, e.node).group);
    ++s.done;
    for (uint32_t k = g.succStart[e.node]; k < g.succStart[e.node + 1]; ++k)
      if (--s.indeg[g.succ[k]] == 0)
        ready(e.rank, g.succ[k], e.time);
    dispatch(e.rank, e.time);
  }
  for (int64_t r = 0; r < n; ++r)
    if (st[r].done != set.ranks[r].graph->numNodes)
      return false;
  return true;
}

} // namespace

std::string stage::trace::replayTimeline(const TraceSetOptions &options,
                                         const TimelineOptions &t,
                                         ReplayedTimeline &out) {
  TraceSetOptions o = options;
  ::stage::DeviceProfile device = t.device;
  // Written by the loading threads; only ever set to false.
  auto durations = std::make_shared<std::atomic<bool>>(true);
  o.computeSeconds = [device, durations](uint64_t ops, uint64_t bytes,
                                         uint64_t micros) {
    if (micros)
      return double(micros) * 1e-6;
    *durations = false;
    // A trace says only FLOPs: counted on the matrix units.
    return ::stage::kernelSeconds(double(ops), 0, double(bytes), 1, device);
  };
  Errors errors;
  TraceSet set;
  bool loaded = loadTraceSet(o, set, errors);
  bool truncated;
  std::vector<std::string> problems = errors.take(truncated);
  if (!loaded || !problems.empty())
    return (problems.empty() ? std::string("cannot read the trace set")
                             : problems.front()) +
           " (stage-trace verify lists every problem)";
  int64_t n = int64_t(set.ranks.size());
  out.ranks = n;
  out.durations = *durations;
  std::set<int64_t> shown;
  for (int64_t r : t.ranks) {
    if (r < 0 || r >= n)
      return "--ranks: rank " + std::to_string(r) + " is not one of the " +
             std::to_string(n) + " ranks";
    shown.insert(r);
  }
  Replay replay(set, t, shown);
  if (!replay.run())
    return "the replay does not finish: some ranks wait forever "
           "(stage-trace verify says where)";
  out.iteration = replay.end();
  for (int64_t r : shown) {
    // The names, ids and sizes from the rank's file.
    const std::string &path = set.ranks[r].path;
    std::string error;
    auto buf = readSetFile(o, path, error);
    TraceFile file;
    if (buf)
      (void)decodeTrace(path, buf->getBuffer(), file);
    std::vector<ReplayedNode> &nodes = out.byRank[r];
    for (const Span &s : replay.spans(r)) {
      ReplayedNode node;
      node.start = s.start;
      node.end = s.end;
      node.lane = s.lane;
      if (s.node < file.nodes.size()) {
        const Node &f = file.nodes[s.node];
        node.id = f.id;
        node.name = std::string(f.name);
        node.flops = f.type == CompNode ? f.numOps.raw : 0;
        node.bytes = f.type == CompNode ? 0 : f.commSize.raw;
      }
      nodes.push_back(std::move(node));
    }
  }
  return "";
}

std::string stage::trace::writeTimeline(const TraceSetOptions &o,
                                        const TimelineOptions &t,
                                        llvm::raw_ostream &os) {
  ReplayedTimeline replay;
  if (std::string error = replayTimeline(o, t, replay); !error.empty())
    return error;
  llvm::json::OStream j(os);
  j.object([&] {
    j.attribute("displayTimeUnit", "ms");
    j.attributeObject("otherData", [&] {
      j.attribute("generator", "stage-trace timeline");
      j.attribute("device", t.device.displayName());
      j.attribute("ranks", replay.ranks);
      j.attribute("iteration_seconds", replay.iteration);
    });
    j.attributeArray("traceEvents", [&] {
      for (const auto &[r, nodes] : replay.byRank) {
        auto meta = [&, r = r](const char *what, int64_t tid,
                               const std::string &name) {
          j.object([&] {
            j.attribute("ph", "M");
            j.attribute("name", what);
            j.attribute("pid", r);
            j.attribute("tid", tid);
            j.attributeObject("args", [&] { j.attribute("name", name); });
          });
        };
        meta("process_name", 0, "rank " + std::to_string(r));
        uint32_t lanes = 0;
        for (const ReplayedNode &s : nodes)
          lanes = std::max(lanes, s.lane);
        meta("thread_name", 0, "compute");
        for (uint32_t l = 1; l <= lanes; ++l)
          meta("thread_name", l, "communication " + std::to_string(l));
        for (const ReplayedNode &s : nodes)
          j.object([&] {
            j.attribute("name", s.name.empty() ? "node" : s.name);
            j.attribute("cat", s.lane ? "communication" : "compute");
            j.attribute("ph", "X");
            j.attribute("ts", s.start * 1e6);
            j.attribute("dur", (s.end - s.start) * 1e6);
            j.attribute("pid", r);
            j.attribute("tid", int64_t(s.lane));
            j.attributeObject("args", [&] {
              j.attribute("id", int64_t(s.id));
              if (s.lane == 0)
                j.attribute("flops", int64_t(s.flops));
              else
                j.attribute("bytes", int64_t(s.bytes));
            });
          });
      }
    });
  });
  os << "\n";
  return "";
}
