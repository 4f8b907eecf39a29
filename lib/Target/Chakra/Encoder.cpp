//===- Encoder.cpp - Chakra nodes as bytes, per rank ----------------------===//

#include "Encoder.h"

#include "Wire.h"

#include "Stage/Support/TimeModel.h"

#include <array>

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::chakra;
using namespace mlir::stage::chakra::wire;

namespace {
/// AttributeProto builders, each with the oneof member every Chakra reader
/// accepts (a oneof member is written even when zero). `into`: the field of
/// the message that holds the attribute (a Node's, or GlobalMetadata's).
void attrInt64(std::string &node, llvm::StringRef name, int64_t v,
               unsigned into = field::NodeAttr) {
  std::string a;
  bytesField(a, field::AttrName, name);
  varintField(a, field::AttrInt64, uint64_t(v));
  bytesField(node, into, a);
}
void attrUint64(std::string &node, llvm::StringRef name, uint64_t v) {
  std::string a;
  bytesField(a, field::AttrName, name);
  varintField(a, field::AttrUint64, v);
  bytesField(node, field::NodeAttr, a);
}
void attrInt32(std::string &node, llvm::StringRef name, int32_t v) {
  std::string a;
  bytesField(a, field::AttrName, name);
  // int32 is sign-extended to 64 bits on the wire.
  varintField(a, field::AttrInt32, uint64_t(int64_t(v)));
  bytesField(node, field::NodeAttr, a);
}
void attrBool(std::string &node, llvm::StringRef name, bool v) {
  std::string a;
  bytesField(a, field::AttrName, name);
  varintField(a, field::AttrBool, v ? 1 : 0);
  bytesField(node, field::NodeAttr, a);
}
/// A bool_list attribute.
void attrBoolList(std::string &node, llvm::StringRef name,
                  ArrayRef<bool> values) {
  std::string list, a;
  for (bool v : values)
    varintField(list, field::ListValues, v ? 1 : 0);
  bytesField(a, field::AttrName, name);
  bytesField(a, field::AttrBoolList, list);
  bytesField(node, field::NodeAttr, a);
}

/// A string_list attribute (written even when empty: the member is there).
void attrStringList(std::string &node, llvm::StringRef name,
                    ArrayRef<std::string> values) {
  std::string list, a;
  for (const std::string &v : values)
    bytesField(list, field::ListValues, v);
  bytesField(a, field::AttrName, name);
  bytesField(a, field::AttrStringList, list);
  bytesField(node, field::NodeAttr, a);
}
void attrString(std::string &node, llvm::StringRef name, llvm::StringRef v,
                unsigned into = field::NodeAttr) {
  std::string a;
  bytesField(a, field::AttrName, name);
  bytesField(a, field::AttrString, v);
  bytesField(node, into, a);
}

/// ASTRA-sim's memory tracker's view of node `id`: the tensors it reads (the
/// outputs of the nodes whose data it takes) and the one it writes, as
/// string lists of (name, bytes) pairs; a node's output is named after it.
void attrIOInfo(std::string &s, uint64_t id, const TraceNode &n,
                ArrayRef<TraceNode> nodes) {
  std::vector<std::string> in, out;
  for (uint32_t d : ArrayRef<uint32_t>(n.deps).take_front(n.dataDeps)) {
    in.push_back("t" + std::to_string(d));
    in.push_back(std::to_string(nodes[d].outBytes));
  }
  if (n.outBytes) {
    out.push_back("t" + std::to_string(id));
    out.push_back(std::to_string(n.outBytes));
  }
  attrStringList(s, "inputs", in);
  attrStringList(s, "outputs", out);
}

/// The fields every rank shares: id, name, type, deps, duration and the
/// attributes that do not depend on the rank.
std::string encodeHead(uint64_t id, const TraceNode &n,
                       ArrayRef<TraceNode> nodes, bool ioInfo,
                       ArrayRef<std::array<bool, 2>> levels) {
  std::string s;
  if (id)
    varintField(s, field::NodeId, id);
  bytesField(s, field::NodeName, n.name);
  unsigned type = n.kind == NodeKind::Compute      ? field::CompNode
                  : n.kind == NodeKind::Collective ? field::CollNode
                  : n.kind == NodeKind::Send       ? field::SendNode
                                                   : field::RecvNode;
  varintField(s, field::NodeType, type);
  if (!n.deps.empty()) {
    std::string packed;
    for (uint32_t d : n.deps)
      varint(packed, d);
    bytesField(s, field::NodeDataDeps, packed);
  }
  if (n.micros)
    varintField(s, field::NodeDurationMicros, n.micros);
  attrBool(s, "is_cpu_op", false);
  switch (n.kind) {
  case NodeKind::Compute:
    attrInt64(s, "num_ops", int64_t(n.flops));
    attrUint64(s, "tensor_size", n.bytes);
    break;
  case NodeKind::Collective:
    attrInt64(s, "comm_type", n.commType);
    attrInt64(s, "comm_size", int64_t(n.bytes));
    attrInt32(s, "comm_tag", int32_t(n.tag));
    if (!levels.empty())
      attrBoolList(s, "involved_dim", levels[n.group]);
    break;
  case NodeKind::Send:
  case NodeKind::Recv:
    attrInt64(s, "comm_size", int64_t(n.bytes));
    attrInt32(s, "comm_tag", int32_t(n.tag));
    break;
  }
  if (ioInfo)
    attrIOInfo(s, id, n, nodes);
  return s;
}
} // namespace

void mlir::stage::chakra::encodeMetadata(std::string &out,
                                         llvm::StringRef setId, int64_t rank,
                                         int64_t ranks) {
  std::string m;
  bytesField(m, field::MetaVersion, "0.0.4");
  attrString(m, "trace_set", setId, field::MetaAttr);
  attrInt64(m, "rank", rank, field::MetaAttr);
  attrInt64(m, "num_ranks", ranks, field::MetaAttr);
  framed(out, m);
}

/// Per group axis set of `w`, the levels of a two-level network (inside a
/// node, across nodes) its groups span; none unless the ranks fill whole
/// nodes of `w.gpusPerNode`, more than one.
static std::vector<std::array<bool, 2>> groupLevels(const Workload &w) {
  int64_t perNode = w.gpusPerNode, ranks = w.getNumRanks();
  std::vector<std::array<bool, 2>> levels;
  if (perNode <= 0 || ranks <= perNode || ranks % perNode != 0)
    return levels;
  for (const auto &set : w.groupAxes) {
    std::vector<std::pair<int64_t, bool>> lastFirst;
    double size = 1;
    for (int a = int(w.axes.size()) - 1; a >= 0; --a) {
      bool member = llvm::is_contained(set, a);
      lastFirst.push_back({w.degrees[a], member});
      if (member)
        size *= double(w.degrees[a]);
    }
    double r = ::stage::membersPerNode(lastFirst.data(), lastFirst.size(),
                                       perNode);
    levels.push_back({r > 1, r < size});
  }
  return levels;
}

ClassTemplate::ClassTemplate(const Workload &w, const ClassTrace &trace) {
  std::vector<std::array<bool, 2>> levels = groupLevels(w);
  for (auto [id, n] : llvm::enumerate(trace.nodes)) {
    std::string head = encodeHead(id, n, trace.nodes, w.ioInfo, levels);
    if (n.kind == NodeKind::Compute) {
      framed(fixed, head);
      continue;
    }
    patches.push_back(
        {fixed.size(), std::move(head), n.kind, n.group, n.shift, n.peer});
  }
}

void ClassTemplate::encodeRank(const RankLayout &layout, int64_t rank,
                               std::string &out,
                               ArrayRef<int64_t> handoffPeers) const {
  size_t at = 0;
  std::string tail;
  for (const Patch &p : patches) {
    out.append(fixed, at, p.offset - at);
    at = p.offset;
    tail.clear();
    if (p.kind == NodeKind::Collective) {
      attrString(tail, "pg_name", std::to_string(layout.getGroupId(rank, p.group)));
    } else {
      int64_t peer = p.peer >= 0    ? p.peer
                     : p.peer == -1 ? layout.getPipelinePeer(rank, p.shift)
                                    : handoffPeers[-2 - p.peer];
      bool send = p.kind == NodeKind::Send;
      attrInt32(tail, "comm_src", int32_t(send ? rank : peer));
      attrInt32(tail, "comm_dst", int32_t(send ? peer : rank));
    }
    varint(out, p.head.size() + tail.size());
    out.append(p.head);
    out.append(tail);
  }
  out.append(fixed, at, std::string::npos);
}
