//===- ShardingRuleInterface.cpp - How an op may be split -----------------===//

#include "Stage/Dialect/Stage/Interfaces/ShardingRuleInterface.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::stage;

#include "Stage/Dialect/Stage/Interfaces/ShardingRuleInterface.cpp.inc"

void FactorModel::print(raw_ostream &os) const {
  auto list = [&](ArrayRef<SmallVector<int>> dims) {
    os << "(";
    llvm::interleaveComma(dims, os, [&](ArrayRef<int> d) {
      os << "[";
      llvm::interleaveComma(d, os);
      os << "]";
    });
    os << ")";
  };
  list(operands);
  os << " -> ";
  list(results);
  auto set = [&](StringRef name, const llvm::SmallBitVector &bits) {
    if (bits.none())
      return;
    os << " " << name << " {";
    llvm::interleaveComma(bits.set_bits(), os);
    os << "}";
  };
  set("summable", summable);
  set("frozen", frozen);
  set("keep-split", keepSplit);
  if (linear)
    os << " linear";
}
