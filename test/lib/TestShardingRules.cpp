//===- TestShardingRules.cpp - Print every op's sharding rule -------------===//
//
// --test-stage-sharding-rules prints, as a remark on each op that has one,
// its sharding rule (ShardingRuleOpInterface): the factors of each operand
// and result and the factors that are summable, frozen or kept split.
// `replicate-kv` gives the rules under more tp ranks than kv heads.
//
//===----------------------------------------------------------------------===//

#include "Stage/Dialect/Stage/IR/StageOps.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::stage;

namespace {
struct TestShardingRulesPass
    : public PassWrapper<TestShardingRulesPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestShardingRulesPass)
  TestShardingRulesPass() = default;
  TestShardingRulesPass(const TestShardingRulesPass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const final { return "test-stage-sharding-rules"; }
  StringRef getDescription() const final {
    return "Print each op's sharding rule as a remark";
  }
  void runOnOperation() override {
    ShardingRuleOptions options;
    options.replicateKV = replicateKV;
    getOperation()->walk([&](ShardingRuleOpInterface op) {
      std::string text;
      llvm::raw_string_ostream os(text);
      op.getShardingRule(options).print(os);
      op->emitRemark() << op->getName() << " " << text;
    });
  }

  Option<bool> replicateKV{*this, "replicate-kv",
                           llvm::cl::desc("Rules with the kv heads replicated"),
                           llvm::cl::init(false)};
};
} // namespace

namespace mlir::stage::test {
void registerTestShardingRulesPass() {
  PassRegistration<TestShardingRulesPass>();
}
} // namespace mlir::stage::test
