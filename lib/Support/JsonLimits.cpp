//===- JsonLimits.cpp - JSON inputs parsed within limits ------------------===//

#include "Stage/Support/JsonLimits.h"

#include "llvm/Support/Error.h"

using namespace sym;

static llvm::Error errorAt(llvm::StringRef text, size_t at,
                           const llvm::Twine &message) {
  unsigned line = 1, column = 1;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "[" + llvm::Twine(line) + ":" + llvm::Twine(column) +
          ", byte=" + llvm::Twine(at) + "]: " + message);
}

llvm::Expected<llvm::json::Value>
sym::parseJsonWithinLimits(llvm::StringRef text, const JsonLimits &limits) {
  if (text.size() > limits.maxBytes)
    return errorAt(text, 0,
                   "the document has " + llvm::Twine(text.size()) +
                       " bytes, more than the limit of " +
                       llvm::Twine(limits.maxBytes));
  // Depth of brackets outside strings: one linear pass, no recursion.
  unsigned depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits.maxDepth)
        return errorAt(text, i,
                       "nested more than " + llvm::Twine(limits.maxDepth) +
                           " levels deep");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return llvm::json::parse(text);
}
