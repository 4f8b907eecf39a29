//===- OptionString.h - Spelling checks of plan option strings --*- C++ -*-===//
//
// MLIR parses a pass's option string `dp=2 tp=2` itself, and lets a later
// `tp=4` silently replace an earlier `tp=2`; a comma-separated list
// `dp=2,tp=2` gets an error about the first value. The plan passes check
// the string first, so that both get an error that says what to write.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TRANSFORMS_OPTIONSTRING_H
#define STAGE_LIB_TRANSFORMS_OPTIONSTRING_H

#include "Stage/Dialect/Stage/IR/StageDiagnostics.h"
#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::stage {

/// Fails, through `errorHandler`, on an option given twice or options
/// separated by commas. `pass` names the pass or pipeline in the message.
LogicalResult
checkOptionString(StringRef pass, StringRef options,
                  function_ref<LogicalResult(const Twine &)> errorHandler);

/// The value an enum-valued option spells, for an ODS enum `E` whose values
/// run from 0 to `maxValue`; an error at `root` lists the spellings: "pass:
/// unknown schedule 'x'; expected gpipe, 1f1b or interleaved". (The options
/// are strings in ODS: MLIR's enum option parser has its own message.)
template <typename E>
FailureOr<E> parseEnumOption(Operation *root, StringRef pass, StringRef what,
                             StringRef text, unsigned maxValue) {
  if (std::optional<E> value = symbolizeEnum<E>(text))
    return *value;
  SmallVector<StringRef> names;
  for (unsigned i = 0; i <= maxValue; ++i)
    names.push_back(stringifyEnum(static_cast<E>(i)));
  std::string list = llvm::join(ArrayRef<StringRef>(names).drop_back(), ", ");
  return emitOptionError(root)
         << pass << ": unknown " << what << " '" << text << "'; expected "
         << list << " or " << names.back();
}

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_OPTIONSTRING_H
