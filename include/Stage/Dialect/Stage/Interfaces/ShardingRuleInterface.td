//===- ShardingRuleInterface.td - How an op may be split ----*- tablegen -*-===//

#ifndef STAGE_SHARDING_RULE_INTERFACE
#define STAGE_SHARDING_RULE_INTERFACE

include "mlir/IR/OpBase.td"

def Stage_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::stage";
  let description = [{
    An op that stage-shard splits by its rule: the op described like an
    einsum (a `FactorModel`), every dimension of every operand and result a
    factor of one index space. Splitting a factor over a grid axis splits
    every dimension that carries it; a summable factor absent from a result
    leaves a partial sum there; a frozen factor stays whole. The planner
    chooses, for every grid axis, the factor that moves the fewest bytes
    (docs/Sharding.md); `--test-stage-sharding-rules` prints each op's rule.
  }];
  let methods = [
    InterfaceMethod<"The op's factor model under the plan's options.",
      "::mlir::stage::FactorModel", "getShardingRule",
      (ins "const ::mlir::stage::ShardingRuleOptions &":$options)>,
  ];
}

#endif // STAGE_SHARDING_RULE_INTERFACE
