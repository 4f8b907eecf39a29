//===- StageTypes.td - Types of the stage dialect ------------*- tablegen -*-===//

#ifndef STAGE_TYPES
#define STAGE_TYPES

include "Stage/Dialect/Stage/IR/StageAttrs.td"

def Stage_SymTensorType : Stage_Type<"SymTensor", "tensor"> {
  let summary = "a tensor with symbolic dimensions";
  let description = [{
    A ranked tensor whose dimensions are symbolic expressions and whose
    element type is a builtin integer or float type. Before partitioning the
    shape is global; after it, local to one rank (`D/tp`).

    ```mlir
    !stage.tensor<[B, S, D], bf16>
    !stage.tensor<[L, D, H, Dh], bf16>
    !stage.tensor<[B/dp, S/(cp*tp), D], bf16>
    !stage.tensor<[], f32>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::stage::ExprAttr", "dimensions">:$shape,
    "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilder<(ins "::llvm::ArrayRef<::sym::Expr>":$dims,
                     "::mlir::Type":$elementType)>,
  ];
  let skipDefaultBuilders = 0;
  let extraClassDeclaration = [{
    unsigned getRank() const { return getShape().size(); }
    ::sym::Expr getDim(unsigned i) const { return getShape()[i].getValue(); }
    ::llvm::SmallVector<::sym::Expr> getDims() const;
    ::sym::Expr getNumElements() const;
    /// Bytes of one element: 2 for bf16, 4 for f32, 1 for i1 and f8.
    int64_t getElementBytes() const;
    ::sym::Expr getSizeInBytes() const;
    SymTensorType withDims(::llvm::ArrayRef<::sym::Expr> dims) const;
    SymTensorType withElementType(::mlir::Type elementType) const;
    /// The type without its leading dimension (one slice of a stack).
    SymTensorType dropLeadingDim() const;
    /// The type with `count` prepended (a stack of `count` slices).
    SymTensorType stacked(const ::sym::Expr &count) const;
  }];
}

#endif // STAGE_TYPES
