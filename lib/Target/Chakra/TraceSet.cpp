//===- TraceSet.cpp - The files of a run, rank by rank --------------------===//

#include "TraceSet.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/SHA256.h"

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

TraceSet::TraceSet(Workload w) {
  addPart(std::move(w));
  computeIdentity();
}

namespace {
/// The bytes a workload is made of, in a fixed layout, for its digest.
class WorkloadBytes {
public:
  void add(int64_t v) {
    for (int i = 0; i < 8; ++i)
      out.push_back(char(uint64_t(v) >> (8 * i)));
  }
  void add(llvm::StringRef s) {
    add(int64_t(s.size()));
    out.append(s.data(), s.size());
  }
  template <typename Range> void addAll(const Range &r) {
    add(int64_t(std::size(r)));
    for (const auto &v : r)
      add(int64_t(v));
  }
  void add(const Workload &w) {
    add(int64_t(w.axes.size()));
    for (const std::string &a : w.axes)
      add(a);
    addAll(w.degrees);
    add(w.ppAxis);
    add(int64_t(w.groupAxes.size()));
    for (const auto &g : w.groupAxes)
      addAll(g);
    add(w.servingGroups);
    add(w.ioInfo);
    add(w.gpusPerNode);
    add(int64_t(w.classes.size()));
    for (const ClassTrace &c : w.classes) {
      add(int64_t(c.nodes.size()));
      for (const TraceNode &n : c.nodes) {
        for (int64_t v :
             {int64_t(n.kind), int64_t(n.flops), int64_t(n.bytes),
              int64_t(n.micros), int64_t(n.commType), int64_t(n.group), n.shift,
              n.tag, n.peer, int64_t(n.handoff), int64_t(n.dataDeps),
              int64_t(n.outBytes)})
          add(v);
        add(n.name);
        addAll(n.deps);
      }
      add(int64_t(c.caches.size()));
      for (const CacheShard &k : c.caches) {
        add(k.name);
        addAll(k.local);
        add(int64_t(k.split.size()));
        for (const auto &axes : k.split)
          addAll(axes);
        add(k.firstLayer);
        addAll(k.distinct);
        add(k.elementBytes);
      }
    }
  }
  std::string out;
};
} // namespace

/// Bumped whenever the encoder writes other bytes for the same workloads:
/// the files of two builds must not pass for one set.
static constexpr llvm::StringLiteral kEncoding = "stage chakra encoding 1";

void TraceSet::computeIdentity() {
  llvm::SHA256 sha;
  sha.update(kEncoding);
  for (const auto &p : parts) {
    WorkloadBytes bytes;
    bytes.add(p->w);
    sha.update(bytes.out);
  }
  std::array<uint8_t, 32> digest = sha.final();
  identity.clear();
  llvm::raw_string_ostream os(identity);
  for (int i = 0; i < 16; ++i)
    os << llvm::format_hex_no_prefix(digest[i], 2);
}

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
  set.computeIdentity();
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
  encodeMetadata(out, identity, rank, getNumRanks());
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
