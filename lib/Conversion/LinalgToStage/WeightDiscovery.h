//===- WeightDiscovery.h - Weights no annotation names ----------*- C++ -*-===//
//-*-===//
//
// Frontends do not say which tensors are trained: torch-mlir lifts
// parameters to plain arguments or inlines them as `dense_resource`
// constants. The rule (docs/Frontends.md): the dimensions of a function's
// tensors are joined where a linalg op's indexing maps, a reshape's
// reassociation or a slice make them one loop. The batch is the dimension
// the most linalg results carry (fills, copies and transposes aside); the
// data arguments are those with it; the *activation* dimensions are the
// batch and the data arguments' dimensions that at least half as many
// results carry (the sequence, not the hidden size). A floating-point
// tensor with no activation dimension, read as weights are (contracted,
// or added or multiplied elementwise), is a weight: an argument when the
// function annotates none, a constant that is not a splat. Any other
// tensor is data or a buffer.
//
//===----------------------------------------------------------------------===//

#ifndef STAGE_LIB_CONVERSION_LINALGTOSTAGE_WEIGHTDISCOVERY_H
#define STAGE_LIB_CONVERSION_LINALGTOSTAGE_WEIGHTDISCOVERY_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"

namespace mlir::stage {

/// The activation dimensions of one function's tensors.
class ActivationDims {
public:
  explicit ActivationDims(func::FuncOp fn);

  /// Whether `v` (a ranked tensor) has an activation dimension.
  bool carriesActivations(Value v) const;
  /// Whether `v` is a weight by the rule: floating point, with no
  /// activation dimension, read by the function's linalg ops.
  bool isWeight(Value v) const;

private:
  unsigned id(Value v, unsigned dim);
  unsigned fresh() { return next++; }

  llvm::DenseMap<std::pair<Value, unsigned>, unsigned> ids;
  llvm::EquivalenceClasses<unsigned> classes;
  /// Leaders of the activation classes.
  llvm::DenseSet<unsigned> activation;
  unsigned next = 0;
};

/// Whether no argument of `fn` is annotated as a weight or an input (the
/// rule applies to arguments only then).
bool hasNoArgumentAnnotations(func::FuncOp fn);

/// The name of a tensor constant's parameter: its location's name, else
/// its `dense_resource` key (torch-mlir keys them by parameter), else
/// `const.N` with `index` N.
std::string getConstantName(arith::ConstantOp c, int64_t index);

/// Whether `c` is a tensor constant discovery may take for a weight: not a
/// splat (a fill, a scale are one value repeated).
bool mayBeWeightConstant(arith::ConstantOp c);

} // namespace mlir::stage

#endif // STAGE_LIB_CONVERSION_LINALGTOSTAGE_WEIGHTDISCOVERY_H
