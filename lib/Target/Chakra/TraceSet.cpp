//===- TraceSet.cpp - The files of a run, rank by rank --------------------===//

#include "TraceSet.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

TraceSet::Part::Part(Workload w, int64_t firstRank, int64_t firstGroup)
    : w(std::move(w)), layout(this->w, firstRank, firstGroup) {
  for (const ClassTrace &c : this->w.classes) {
    SmallVector<int64_t> &groups = handoffGroups.emplace_back();
    for (const TraceNode &n : c.nodes)
      if (n.handoff)
        groups.push_back(n.tag);
    templates.push_back(
        groups.empty() ? std::optional<ClassTemplate>(ClassTemplate(this->w, c))
                       : std::nullopt);
  }
}

void TraceSet::addPart(Workload w) {
  int64_t firstRank = 0, firstGroup = 0;
  if (!parts.empty()) {
    const RankLayout &last = parts.back()->layout;
    firstRank = last.getFirstRank() + last.getNumRanks();
    for (const auto &p : parts)
      firstGroup += p->layout.getNumGroups();
  }
  parts.push_back(std::make_unique<Part>(std::move(w), firstRank, firstGroup));
}

TraceSet::TraceSet(Workload w) { addPart(std::move(w)); }

FailureOr<TraceSet> TraceSet::disaggregated(Workload prefill, Workload decode,
                                            Location loc) {
  TraceSet set;
  set.addPart(std::move(prefill));
  set.addPart(std::move(decode));
  FailureOr<KVHandoff> h =
      KVHandoff::plan(set.parts[0]->w, set.parts[0]->layout, set.parts[1]->w,
                      set.parts[1]->layout, loc);
  if (failed(h))
    return failure();
  set.handoff = std::move(*h);
  return set;
}

int64_t TraceSet::getNumRanks() const {
  const RankLayout &last = parts.back()->layout;
  return last.getFirstRank() + last.getNumRanks();
}

SmallVector<const Workload *> TraceSet::getWorkloads() const {
  SmallVector<const Workload *> out;
  for (const auto &p : parts)
    out.push_back(&p->w);
  return out;
}

/// `c` for rank `rank`: each handoff node replaced by the rank's messages
/// (or, without any, by what it waits for), their peers the rank's handoff
/// peers in order.
static ClassTrace withMessages(const ClassTrace &c, int64_t rank,
                               const KVHandoff &h) {
  size_t handoffs = 0;
  ClassTrace out;
  out.nodes.reserve(c.nodes.size());
  std::vector<SmallVector<uint32_t, 4>> became(c.nodes.size());
  for (auto [i, n] : llvm::enumerate(c.nodes)) {
    SmallVector<uint32_t, 4> deps;
    for (uint32_t d : n.deps)
      for (uint32_t id : became[d])
        if (!llvm::is_contained(deps, id))
          deps.push_back(id);
    if (!n.handoff) {
      became[i] = {uint32_t(out.nodes.size())};
      out.nodes.push_back(n);
      out.nodes.back().deps = std::move(deps);
      continue;
    }
    ArrayRef<HandoffMessage> messages = h.getMessages(rank, n.tag);
    if (messages.empty()) {
      became[i] = deps;
      continue;
    }
    for (const HandoffMessage &m : messages) {
      became[i].push_back(uint32_t(out.nodes.size()));
      TraceNode t;
      t.kind = n.kind;
      t.name = n.name;
      t.bytes = m.bytes;
      t.tag = m.tag;
      t.peer = ClassTemplate::handoffPeer(handoffs++);
      t.deps = deps;
      out.nodes.push_back(std::move(t));
    }
  }
  return out;
}

void TraceSet::encodeRank(int64_t rank, std::string &out) const {
  for (const auto &p : parts) {
    const RankLayout &l = p->layout;
    if (rank >= l.getFirstRank() + l.getNumRanks())
      continue;
    int64_t stage = l.getStage(rank);
    if (const std::optional<ClassTemplate> &t = p->templates[stage]) {
      t->encodeRank(l, rank, out);
      return;
    }
    // The rank's message shape, and its peers.
    const ClassTrace &cls = p->w.classes[stage];
    std::string shape = std::to_string(stage);
    SmallVector<int64_t> peers;
    for (int64_t group : p->handoffGroups[stage]) {
      ArrayRef<HandoffMessage> messages = handoff->getMessages(rank, group);
      shape += ";" + std::to_string(messages.size());
      for (const HandoffMessage &m : messages) {
        shape += "," + std::to_string(m.bytes) + ":" + std::to_string(m.tag);
        peers.push_back(m.peer);
      }
    }
    const ClassTemplate *t;
    {
      std::lock_guard<std::mutex> lock(p->shapedLock);
      std::unique_ptr<ClassTemplate> &slot = p->shaped[shape];
      if (!slot)
        slot = std::make_unique<ClassTemplate>(
            p->w, withMessages(cls, rank, *handoff));
      t = slot.get();
    }
    t->encodeRank(l, rank, out, peers);
    return;
  }
}

void TraceSet::writeGroups(llvm::raw_ostream &os) const {
  os << "{";
  bool first = true;
  for (const auto &p : parts)
    p->layout.writeGroupEntries(os, first);
  os << "\n}\n";
}
