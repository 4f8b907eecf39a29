//===- TraceManifest.cpp - What a published trace set holds ---------------===//

#include "Stage/Support/TraceManifest.h"

#include "Stage/Support/JsonLimits.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

using namespace stage;

std::string stage::fileDigest(llvm::StringRef bytes) {
  std::string s;
  llvm::raw_string_ostream(s)
      << llvm::format_hex_no_prefix(llvm::xxh3_64bits(bytes), 16);
  return s;
}

std::string stage::getManifestFileName(llvm::StringRef groupsFile) {
  llvm::StringRef stem = groupsFile;
  stem.consume_back(".json");
  return (stem + ".manifest.json").str();
}

std::string stage::checkTraceName(llvm::StringRef name) {
  if (name.count("%d") != 1)
    return "must contain %d once (the rank)";
  if (name.find_first_of("/\\") != llvm::StringRef::npos ||
      name.starts_with("."))
    return "must be a file name inside --output-dir (no directory, not "
           "starting with '.')";
  if (name.starts_with("%d"))
    return "must start with a name before %d (the groups file and the "
           "manifest are named after it)";
  return "";
}

std::string TraceManifest::traceFile(int64_t rank) const {
  size_t at = traceName.find("%d");
  return traceName.substr(0, at) + std::to_string(rank) +
         traceName.substr(at + 2);
}

int64_t stage::rankOfTraceFile(llvm::StringRef pattern, llvm::StringRef name) {
  size_t at = pattern.find("%d");
  if (at == llvm::StringRef::npos)
    return -1;
  llvm::StringRef head = pattern.take_front(at),
                  tail = pattern.drop_front(at + 2);
  if (!name.consume_front(head) || !name.consume_back(tail) || name.empty() ||
      !llvm::all_of(name, [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  int64_t r;
  return name.getAsInteger(10, r) ? -1 : r;
}

std::string TraceManifest::print() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  auto quoted = [&](llvm::StringRef v) {
    std::string q;
    llvm::raw_string_ostream qs(q);
    qs << llvm::json::Value(v.str());
    return q;
  };
  os << "{\n"
     << "  \"format\": \"" << kFormat << "\",\n"
     << "  \"version\": " << kVersion << ",\n"
     << "  \"set\": " << quoted(setId) << ",\n"
     << "  \"ranks\": " << ranks << ",\n"
     << "  \"traces\": " << quoted(traceName) << ",\n"
     << "  \"groups\": [" << quoted(groupsFile) << ", " << groups.bytes << ", "
     << quoted(groups.digest) << "],\n";
  if (!extras.empty()) {
    os << "  \"extras\": [";
    bool firstExtra = true;
    for (const auto &[name, e] : extras) {
      os << (firstExtra ? "\n" : ",\n") << "    [" << quoted(name) << ", "
         << e.bytes << ", " << quoted(e.digest) << "]";
      firstExtra = false;
    }
    os << "\n  ],\n";
  }
  os << "  \"files\": [";
  bool first = true;
  for (const auto &[rank, e] : traces) {
    os << (first ? "\n" : ",\n") << "    [" << rank << ", " << e.bytes << ", "
       << quoted(e.digest) << "]";
    first = false;
  }
  os << (first ? "]\n" : "\n  ]\n") << "}\n";
  return s;
}

namespace {
/// A name inside the set's directory: no directory, not hidden.
bool isPlainFileName(llvm::StringRef name) {
  return !name.empty() && !name.starts_with(".") &&
         name.find_first_of("/\\") == llvm::StringRef::npos;
}

bool isHex(llvm::StringRef s, size_t digits) {
  return s.size() == digits &&
         llvm::all_of(s, [](char c) { return llvm::isHexDigit(c); });
}

/// `[name-or-rank, bytes, "digest"]`.
bool readEntry(const llvm::json::Value &v, ManifestEntry &e,
               const llvm::json::Value *&key) {
  const llvm::json::Array *a = v.getAsArray();
  if (!a || a->size() != 3)
    return false;
  std::optional<int64_t> bytes = (*a)[1].getAsInteger();
  std::optional<llvm::StringRef> digest = (*a)[2].getAsString();
  if (!bytes || *bytes < 0 || !digest || !isHex(*digest, 16))
    return false;
  e.bytes = uint64_t(*bytes);
  e.digest = digest->str();
  key = &(*a)[0];
  return true;
}
} // namespace

std::optional<TraceManifest> TraceManifest::parse(llvm::StringRef text,
                                                  std::string &error) {
  llvm::Expected<llvm::json::Value> json = sym::parseJsonWithinLimits(text);
  if (!json) {
    error = "malformed JSON: " + llvm::toString(json.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *o = json->getAsObject();
  if (!o) {
    error = "not a JSON object";
    return std::nullopt;
  }
  if (o->getString("format") != std::optional<llvm::StringRef>(kFormat) ||
      o->getInteger("version") != std::optional<int64_t>(kVersion)) {
    error =
        "not a stage trace-set manifest of version " + std::to_string(kVersion);
    return std::nullopt;
  }
  TraceManifest m;
  std::optional<llvm::StringRef> set = o->getString("set");
  std::optional<int64_t> ranks = o->getInteger("ranks");
  std::optional<llvm::StringRef> traces = o->getString("traces");
  if (!set || !isHex(*set, 32)) {
    error = "\"set\" is not an identity of 32 hex digits";
    return std::nullopt;
  }
  if (!ranks || *ranks <= 0) {
    error = "\"ranks\" is not a positive integer";
    return std::nullopt;
  }
  if (!traces || !checkTraceName(*traces).empty()) {
    error = "\"traces\" is not a rank file name pattern";
    return std::nullopt;
  }
  m.setId = set->str();
  m.ranks = *ranks;
  m.traceName = traces->str();
  const llvm::json::Value *key;
  const llvm::json::Value *groups = o->get("groups");
  std::optional<llvm::StringRef> groupsName;
  if (!groups || !readEntry(*groups, m.groups, key) ||
      !(groupsName = key->getAsString()) || !isPlainFileName(*groupsName)) {
    error = "\"groups\" is not [file name, bytes, digest]";
    return std::nullopt;
  }
  m.groupsFile = groupsName->str();
  if (const llvm::json::Value *extras = o->get("extras")) {
    const llvm::json::Array *list = extras->getAsArray();
    if (!list) {
      error = "\"extras\" is not a list";
      return std::nullopt;
    }
    for (const llvm::json::Value &x : *list) {
      ManifestEntry e;
      std::optional<llvm::StringRef> name;
      if (!readEntry(x, e, key) || !(name = key->getAsString()) ||
          !isPlainFileName(*name) || *name == m.groupsFile ||
          !m.extras.emplace(name->str(), std::move(e)).second) {
        error = "\"extras\" has an entry that is not [file name, bytes, "
                "digest] of a file of its own";
        return std::nullopt;
      }
    }
  }
  const llvm::json::Array *files = o->getArray("files");
  if (!files) {
    error = "\"files\" is not a list";
    return std::nullopt;
  }
  for (const llvm::json::Value &f : *files) {
    ManifestEntry e;
    std::optional<int64_t> rank;
    if (!readEntry(f, e, key) || !(rank = key->getAsInteger()) || *rank < 0 ||
        *rank >= m.ranks) {
      error = "\"files\" has an entry that is not [rank, bytes, digest] of a "
              "rank below " +
              std::to_string(m.ranks);
      return std::nullopt;
    }
    if (!m.traces.emplace(*rank, std::move(e)).second) {
      error = "\"files\" lists rank " + std::to_string(*rank) + " twice";
      return std::nullopt;
    }
  }
  return m;
}
