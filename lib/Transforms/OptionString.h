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

#include "mlir/Support/LLVM.h"

namespace mlir::stage {

/// Fails, through `errorHandler`, on an option given twice or options
/// separated by commas. `pass` names the pass or pipeline in the message.
LogicalResult
checkOptionString(StringRef pass, StringRef options,
                  function_ref<LogicalResult(const Twine &)> errorHandler);

} // namespace mlir::stage

#endif // STAGE_LIB_TRANSFORMS_OPTIONSTRING_H
