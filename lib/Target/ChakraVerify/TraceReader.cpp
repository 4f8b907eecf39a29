//===- TraceReader.cpp - Decoding Chakra trace files ----------------------===//

#include "TraceReader.h"

using namespace stage::trace;

namespace {

/// A cursor over a byte range.
struct Cursor {
  const unsigned char *p, *end;
  bool ok = true;

  bool atEnd() const { return p >= end; }
  uint64_t varint() {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (p >= end) {
        ok = false;
        return 0;
      }
      unsigned char b = *p++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return v;
    }
    ok = false;
    return 0;
  }
  /// A length-delimited payload.
  Cursor sub() {
    uint64_t n = varint();
    if (!ok || uint64_t(end - p) < n) {
      ok = false;
      return {p, p};
    }
    Cursor c{p, p + n};
    p += n;
    return c;
  }
  /// Skips a field of `wire` type; false on a malformed field.
  bool skip(unsigned wire) {
    switch (wire) {
    case 0:
      varint();
      return ok;
    case 1:
      if (end - p < 8)
        return ok = false;
      p += 8;
      return true;
    case 2:
      sub();
      return ok;
    case 5:
      if (end - p < 4)
        return ok = false;
      p += 4;
      return true;
    default:
      return ok = false;
    }
  }
};

std::string_view view(const Cursor &s) {
  return std::string_view(reinterpret_cast<const char *>(s.p), s.end - s.p);
}

void readDeps(Cursor &c, unsigned wire, std::vector<uint64_t> &deps) {
  if (wire == 2) { // packed
    Cursor s = c.sub();
    while (c.ok && s.ok && !s.atEnd())
      deps.push_back(s.varint());
    c.ok &= s.ok;
  } else {
    deps.push_back(c.varint());
  }
}

/// Decodes an AttributeProto: its name, and its value in `a`.
std::string_view decodeAttr(Cursor c, Attr &a, bool &ok) {
  std::string_view name;
  while (c.ok && !c.atEnd()) {
    uint64_t key = c.varint();
    unsigned field = unsigned(key >> 3), wire = unsigned(key & 7);
    if (field == 1 && wire == 2) {
      name = view(c.sub());
    } else if (field >= 3 && field <= 32) {
      a.member = field;
      a.present = true;
      if (wire == 0) {
        a.raw = c.varint();
      } else if (wire == 2) {
        a.text = view(c.sub());
      } else {
        c.skip(wire);
      }
    } else if (!c.skip(wire)) {
      break;
    }
  }
  ok &= c.ok;
  return name;
}

/// Decodes a Node's AttributeProto and files it under the attribute it
/// names.
void readAttr(Cursor c, Node &n, bool &ok) {
  Attr a;
  std::string_view name = decodeAttr(c, a, ok);
  struct {
    const char *name;
    Attr Node::*slot;
  } known[] = {{"is_cpu_op", &Node::isCpuOp}, {"num_ops", &Node::numOps},
               {"tensor_size", &Node::tensorSize}, {"comm_type", &Node::commType},
               {"comm_size", &Node::commSize},   {"comm_src", &Node::commSrc},
               {"comm_dst", &Node::commDst},     {"comm_tag", &Node::commTag},
               {"pg_name", &Node::pgName}};
  for (auto &k : known)
    if (name == k.name)
      n.*k.slot = a;
}

/// The GlobalMetadata's version and the attributes stage's files carry.
bool readMetadata(Cursor m, TraceFile &out) {
  bool ok = true;
  while (m.ok && !m.atEnd()) {
    uint64_t key = m.varint();
    unsigned field = unsigned(key >> 3), wire = unsigned(key & 7);
    if (field == 1 && wire == 2) {
      out.version = std::string(view(m.sub()));
    } else if (field == 2 && wire == 2) {
      Attr a;
      std::string_view name = decodeAttr(m.sub(), a, ok);
      if (name == "trace_set")
        out.traceSet = a;
      else if (name == "rank")
        out.rank = a;
      else if (name == "num_ranks")
        out.numRanks = a;
    } else if (!m.skip(wire)) {
      break;
    }
  }
  out.hasMetadata = m.ok && ok;
  return out.hasMetadata;
}

} // namespace

std::vector<std::string> stage::trace::decodeTrace(const std::string &path,
                                                   std::string_view bytes,
                                                   TraceFile &out) {
  std::vector<std::string> errors;
  out.path = path;
  Cursor c{reinterpret_cast<const unsigned char *>(bytes.data()),
           reinterpret_cast<const unsigned char *>(bytes.data()) + bytes.size()};
  unsigned index = 0;
  while (!c.atEnd()) {
    ++index;
    const unsigned char *start = c.p;
    uint64_t len = c.varint();
    if (!c.ok || len > UINT32_MAX) {
      errors.push_back(path + ": message " + std::to_string(index) +
                       ": bad length prefix at byte " +
                       std::to_string(start - reinterpret_cast<const unsigned char *>(
                                                  bytes.data())));
      return errors;
    }
    if (uint64_t(c.end - c.p) < len) {
      errors.push_back(path + ": message " + std::to_string(index) +
                       " is truncated: " + std::to_string(len) +
                       " bytes announced, " + std::to_string(c.end - c.p) +
                       " left");
      return errors;
    }
    if (len == 0) {
      errors.push_back(path + ": message " + std::to_string(index) +
                       " is empty (an all-default node stops the Python "
                       "reader)");
      continue;
    }
    Cursor m{c.p, c.p + len};
    c.p += len;
    // GlobalMetadata has a string in field 1, a Node a varint (its id).
    if (index == 1) {
      Cursor probe = m;
      uint64_t key = probe.varint();
      if ((key & 7) == 2 && (key >> 3) == 1) {
        if (!readMetadata(m, out))
          errors.push_back(path + ": the GlobalMetadata is malformed");
        // About one node per 40 bytes of our traces: fewer reallocations.
        out.nodes.reserve(bytes.size() / 40);
        out.deps.reserve(bytes.size() / 20);
        continue;
      }
      errors.push_back(path + ": the first message is not a GlobalMetadata "
                              "(readers would swallow this node)");
    }
    Node n;
    n.message = index;
    n.depsBegin = uint32_t(out.deps.size());
    bool ok = true;
    while (m.ok && !m.atEnd()) {
      uint64_t key = m.varint();
      unsigned field = unsigned(key >> 3), wire = unsigned(key & 7);
      if (field == 1 && wire == 0)
        n.id = m.varint();
      else if (field == 2 && wire == 2)
        n.name = view(m.sub());
      else if (field == 3 && wire == 0)
        n.type = m.varint();
      else if ((field == 4 || field == 5) && (wire == 0 || wire == 2))
        readDeps(m, wire, out.deps);
      else if (field == 7 && wire == 0)
        n.durationMicros = m.varint();
      else if (field == 10 && wire == 2)
        readAttr(m.sub(), n, ok);
      else if (!m.skip(wire))
        break;
    }
    if (!m.ok || !ok) {
      errors.push_back(path + ": message " + std::to_string(index) +
                       " is not a well-formed Node");
      out.deps.resize(n.depsBegin);
      continue;
    }
    n.depsCount = uint32_t(out.deps.size() - n.depsBegin);
    out.nodes.push_back(std::move(n));
  }
  if (bytes.empty())
    errors.push_back(path + ": the file is empty (no GlobalMetadata, no "
                            "nodes): a rank that never ran its generator");
  return errors;
}
