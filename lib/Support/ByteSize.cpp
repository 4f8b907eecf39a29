//===- ByteSize.cpp - Sizes as users write them ---------------------------===//

#include "Stage/Support/ByteSize.h"

#include <utility>

std::optional<double> stage::parseByteSize(llvm::StringRef text) {
  static const std::pair<const char *, double> units[] = {
      {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024},
      {"TiB", 1024.0 * 1024 * 1024 * 1024}, {"KB", 1e3}, {"MB", 1e6},
      {"GB", 1e9}, {"TB", 1e12}, {"B", 1.0}};
  llvm::StringRef number = text.trim();
  double scale = 1.0;
  for (auto [suffix, factor] : units)
    if (number.consume_back(suffix)) {
      scale = factor;
      break;
    }
  double v;
  if (number.trim().getAsDouble(v) || v <= 0)
    return std::nullopt;
  return v * scale;
}
