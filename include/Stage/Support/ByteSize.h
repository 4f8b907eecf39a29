//===- ByteSize.h - Sizes as users write them -------------------*- C++ -*-===//

#ifndef STAGE_SUPPORT_BYTESIZE_H
#define STAGE_SUPPORT_BYTESIZE_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace stage {

/// `80GiB`, `80GB`, `1.5e9`: bytes; none if the text is no positive size.
std::optional<double> parseByteSize(llvm::StringRef text);

} // namespace stage

#endif // STAGE_SUPPORT_BYTESIZE_H
