//===- OptionString.cpp - Spelling checks of plan option strings ----------===//

#include "OptionString.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"

#include <cctype>

using namespace mlir;

/// The `key=value` words of an option string: separated by spaces outside
/// quotes and braces, as MLIR's option parser reads them.
static SmallVector<StringRef> splitWords(StringRef s) {
  SmallVector<StringRef> words;
  size_t start = 0, depth = 0;
  char quote = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    char c = i < s.size() ? s[i] : ' ';
    if (quote) {
      quote = c == quote ? 0 : quote;
      continue;
    }
    if (c == '"' || c == '\'')
      quote = c;
    else if (c == '{')
      ++depth;
    else if (c == '}' && depth)
      --depth;
    else if (std::isspace(static_cast<unsigned char>(c)) && !depth) {
      if (i > start)
        words.push_back(s.slice(start, i));
      start = i + 1;
    }
  }
  return words;
}

/// Whether `value` holds `,name=`: a second option after a comma.
static bool hasCommaOption(StringRef value) {
  for (size_t i = value.find(','); i != StringRef::npos;
       i = value.find(',', i + 1)) {
    StringRef rest = value.drop_front(i + 1);
    size_t n = 0;
    while (n < rest.size() &&
           (std::isalnum(static_cast<unsigned char>(rest[n])) ||
            rest[n] == '-' || rest[n] == '_'))
      ++n;
    if (n > 0 && n < rest.size() && rest[n] == '=')
      return true;
  }
  return false;
}

LogicalResult mlir::stage::checkOptionString(
    StringRef pass, StringRef options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  llvm::StringMap<StringRef> seen;
  for (StringRef word : splitWords(options)) {
    auto [key, value] = word.split('=');
    if (key.empty())
      return errorHandler(pass + ": '" + word +
                          "' has no option name before '='; options are "
                          "name=value, separated by spaces");
    if (hasCommaOption(value))
      return errorHandler(pass + ": separate options with spaces, as in \"" +
                          key + "=" + value.split(',').first + " " +
                          value.split(',').second +
                          "\"; a comma separates the items of one list");
    auto [it, fresh] = seen.try_emplace(key, word);
    if (!fresh)
      return errorHandler(pass + ": option '" + key + "' is given twice (" +
                          it->second + " and " + word +
                          "); give each option once");
  }
  return success();
}
