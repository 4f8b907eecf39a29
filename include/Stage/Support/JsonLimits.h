//===- JsonLimits.h - JSON inputs parsed within limits ----------*- C++ -*-===//
//
// llvm::json parses recursively: a document nested 100,000 levels deep
// overflows the stack. Every JSON input of stage (HF configs, sharding
// rules, network files, trace-set workload.json, trace dumps) is parsed
// through parseJsonWithinLimits, which refuses a document larger or deeper
// than its limits before parsing it, in the same "[line:col, byte=N]:
// message" form as llvm::json's own errors.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_SUPPORT_JSONLIMITS_H
#define STAGE_SUPPORT_JSONLIMITS_H

#include "llvm/Support/JSON.h"

namespace sym {

struct JsonLimits {
  /// Nested arrays and objects at most (configs need a handful).
  unsigned maxDepth = 256;
  /// Bytes at most.
  size_t maxBytes = size_t(256) << 20;
};

/// `text` parsed, or an error naming where it exceeds `limits` or is
/// malformed.
llvm::Expected<llvm::json::Value>
parseJsonWithinLimits(llvm::StringRef text, const JsonLimits &limits = {});

} // namespace sym

#endif // STAGE_SUPPORT_JSONLIMITS_H
