//===- StageInterfaces.td - Interfaces of the stage dialect --*- tablegen -*-===//

#ifndef STAGE_INTERFACES
#define STAGE_INTERFACES

include "mlir/IR/OpBase.td"

def Stage_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::stage";
  let description = [{
    An op that does work on a device declares what one execution of it costs,
    as symbolic expressions over the dimensions of its operands: FLOPs of
    contractions (matrix units), other FLOPs (vector units) and the bytes it
    reads and writes (the roofline denominator). `docs/CostModel.md` states
    the formula of every op.
  }];
  let methods = [
    InterfaceMethod<"The cost of one execution of the op.",
      "::mlir::stage::Cost", "getCost">,
  ];
}

def Stage_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::mlir::stage";
  let description = [{
    Communication over axes of a `stage.grid`: the collectives and the
    point-to-point send/recv. Every such op names its grid and axes; the
    group of a rank is the set of ranks that differ from it only in those
    axes' coordinates.
  }];
  let methods = [
    InterfaceMethod<"The grid the op communicates on.",
      "::mlir::FlatSymbolRefAttr", "getGridAttr">,
    InterfaceMethod<"The grid axes of the group, outermost first.",
      "::mlir::ArrayAttr", "getAxesAttr">,
    InterfaceMethod<[{
        Bytes of the communication as Chakra's `comm_size` counts them
        (all-reduce: the buffer; all-gather: the per-rank input; reduce-scatter:
        the full input; all-to-all: the send buffer; send/recv: the message).
      }], "::sym::Expr", "getCommBytes">,
  ];
  let extraSharedClassDeclaration = [{
    /// The product of the sizes of the op's axes, as an expression over the
    /// axis symbols.
    ::sym::Expr getGroupSize() {
      return ::mlir::stage::getGroupSize($_op.getAxesAttr());
    }
  }];
}

def Stage_AutodiffOpInterface : OpInterface<"AutodiffOpInterface"> {
  let cppNamespace = "::mlir::stage";
  let description = [{
    An op that knows its vector-Jacobian product: given the gradients of its
    results, it builds the gradients of its operands through a
    `GradientEmitter`, which supplies forward values (kept or recomputed)
    and accumulates operand gradients. Ops without it have no backward, and
    autodiff reports them.
  }];
  let methods = [
    InterfaceMethod<"Builds the backward of the op.",
      "::llvm::LogicalResult", "buildGradient",
      (ins "::mlir::stage::GradientEmitter &":$emitter)>,
  ];
}

#endif // STAGE_INTERFACES
