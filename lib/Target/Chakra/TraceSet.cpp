//===- TraceSet.cpp - The files of a run, rank by rank --------------------===//

#include "TraceSet.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;

TraceSet::Part::Part(Workload w, int64_t firstRank, int64_t firstGroup)
    : w(std::move(w)), layout(this->w, firstRank, firstGroup) {
  for (const ClassTrace &c : this->w.classes) {
    bool hands = llvm::any_of(c.nodes, [](const TraceNode &n) { return n.handoff; });
    templates.push_back(hands ? std::nullopt
                              : std::optional<ClassTemplate>(
                                    ClassTemplate(this->w, c)));
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
/// (or, without any, by what it waits for).
static ClassTrace withMessages(const ClassTrace &c, int64_t rank,
                               const KVHandoff &h) {
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
      t.peer = m.peer;
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
    ClassTrace own = withMessages(p->w.classes[stage], rank, *handoff);
    ClassTemplate(p->w, own).encodeRank(l, rank, out);
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
