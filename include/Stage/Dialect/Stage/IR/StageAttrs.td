//===- StageAttrs.td - Attributes of the stage dialect -------*- tablegen -*-===//

#ifndef STAGE_ATTRS
#define STAGE_ATTRS

include "Stage/Dialect/Stage/IR/StageBase.td"

def Stage_ExprAttr : Stage_Attr<"Expr", "expr"> {
  let summary = "a symbolic integer expression";
  let description = [{
    A canonical sum of rational-coefficient monomials over named symbols
    (see `docs/Stage.md`). Uniqued in the context, so equal expressions are
    the same attribute.

    ```mlir
    #stage.expr<2*B*S*D/tp>
    #stage.expr<H*Dh + 2*KV*Dh>
    ```
  }];
  let parameters = (ins AttrParameter<"::sym::Expr", "expression">:$value);
  let hasCustomAssemblyFormat = 1;
}

def Stage_ShardingAttr : Stage_Attr<"Sharding", "sharding"> {
  let summary = "how a tensor is distributed over grid axes";
  let description = [{
    For each tensor dimension the grid axes that split it (outermost first),
    and the axes over which the value is a pending partial sum. A dimension
    with no axes is replicated over every axis not named anywhere. The same
    concepts as the upstream `shard` dialect and Shardy.

    ```mlir
    // batch split by dp, sequence by cp then tp, hidden replicated
    #stage.sharding<[[dp], [cp, tp], []]>
    // a row-parallel projection's output before its reduction
    #stage.sharding<[[dp], [], []], partial = [tp]>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::ArrayAttr", "axes per dimension">:$dims,
    "::mlir::ArrayAttr":$partial);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// A sharding with no split or partial axes for a tensor of rank `rank`.
    static ShardingAttr getReplicated(::mlir::MLIRContext *ctx, unsigned rank);
    static ShardingAttr get(::mlir::MLIRContext *ctx,
        ::llvm::ArrayRef<::llvm::SmallVector<::std::string>> dims,
        ::llvm::ArrayRef<::std::string> partial);
    unsigned getRank() const { return getDims().size(); }
    ::llvm::SmallVector<::std::string> getDimAxes(unsigned dim) const;
    ::llvm::SmallVector<::std::string> getPartialAxes() const;
    /// Every axis that splits a dimension.
    ::llvm::SmallVector<::std::string> getSplitAxes() const;
    bool isPartial() const { return !getPartial().empty(); }
    bool isReplicated() const;
    /// The dimension `axis` splits, if any.
    ::std::optional<unsigned> getDimOfAxis(::llvm::StringRef axis) const;
    /// The product of the axis sizes splitting `dim`.
    ::sym::Expr getSplitFactor(unsigned dim) const;
  }];
}

#endif // STAGE_ATTRS
