//===- Wire.h - Protocol buffer wire encoding -------------------*- C++ -*-===//
//
// The few wire-format primitives Chakra traces need, written directly into
// a byte string: the emitter's hot path, hundreds of MB per second per core.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_TARGET_CHAKRA_WIRE_H
#define STAGE_LIB_TARGET_CHAKRA_WIRE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir::stage::chakra::wire {

enum WireType : unsigned { Varint = 0, Length = 2 };

inline void varint(std::string &out, uint64_t v) {
  char buf[10];
  unsigned n = 0;
  while (v >= 0x80) {
    buf[n++] = char((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = char(v);
  out.append(buf, n);
}

inline unsigned varintSize(uint64_t v) {
  unsigned n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

inline void key(std::string &out, unsigned field, WireType type) {
  varint(out, (uint64_t(field) << 3) | type);
}

inline void varintField(std::string &out, unsigned field, uint64_t v) {
  key(out, field, Varint);
  varint(out, v);
}

inline void bytesField(std::string &out, unsigned field, llvm::StringRef s) {
  key(out, field, Length);
  varint(out, s.size());
  out.append(s.data(), s.size());
}

/// A length-delimited message: the varint length, then the bytes.
inline void framed(std::string &out, llvm::StringRef message) {
  varint(out, message.size());
  out.append(message.data(), message.size());
}

} // namespace mlir::stage::chakra::wire

#endif // STAGE_LIB_TARGET_CHAKRA_WIRE_H
